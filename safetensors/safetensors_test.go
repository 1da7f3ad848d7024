package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// f32le is the little-endian bytes of vs as float32.
func f32le(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// withLen prefixes header with its length as the format's uint64.
func withLen(n uint64, rest string) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, n)
	return append(b, rest...)
}

// TestEncodeReference pins Encode to the bytes the reference writer
// produces: every expected value is copied from the tests of
// huggingface/safetensors, safetensors/src/tensor.rs at commit 000a16f
// (test_serialization, test_serialization_forced_alignement, test_empty).
func TestEncodeReference(t *testing.T) {
	data := f32le(0, 1, 2, 3, 4, 5)
	cases := []struct {
		name string
		file File
		want []byte
	}{
		{"test_serialization", File{Tensors: []Tensor{{Name: "attn.0", DType: F32, Shape: []int{1, 2, 3}, Data: data}}},
			[]byte{64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
				116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
				58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
				101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
				0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64}},
		{"test_serialization_forced_alignement", File{Tensors: []Tensor{{Name: "attn0", DType: F32, Shape: []int{1, 1, 2, 3}, Data: data}}},
			[]byte{72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
				121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
				91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
				115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
				32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
				160, 64}},
		{"test_empty", File{}, []byte{8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}},
		{"test_empty with metadata", File{Metadata: map[string]string{"framework": "pt"}},
			[]byte{40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
				95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
				116, 34, 125, 125, 32, 32, 32, 32, 32}},
	}
	for i, c := range cases {
		got, err := Encode(&c.file)
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, c.name, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("case %d (%s):\n got %v\nwant %v", i, c.name, got, c.want)
		}
		if _, err := Decode(got); err != nil {
			t.Errorf("case %d (%s): its own output does not decode: %v", i, c.name, err)
		}
	}
}

// TestDecodeReference runs Decode on the reference reader's test inputs
// (safetensors/src/tensor.rs at commit 000a16f: test_empty_shapes_allowed,
// test_deserialization, test_zero_sized_tensor,
// test_whitespace_padded_header accepted; test_json_attack,
// test_metadata_incomplete_buffer, test_header_too_large,
// test_header_too_small, test_invalid_header_length,
// test_invalid_header_non_utf8, test_invalid_header_not_json,
// test_invalid_info, test_validation_overflow refused), plus refusals of
// our own: a repeated name, an unknown dtype or field, a header that does
// not start with '{'.
func TestDecodeReference(t *testing.T) {
	zeros := strings.Repeat("\x00", 16)
	cases := []struct {
		name    string
		in      []byte
		ok      bool
		tensors int
		shape   []int
		data    int // bytes of the first tensor
	}{
		{"test_empty_shapes_allowed", withLen(56, `{"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}`+"\x00\x00\x00\x00"), true, 1, []int{}, 4},
		{"test_deserialization", withLen(60, `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`+zeros), true, 1, []int{2, 2}, 16},
		{"test_zero_sized_tensor", withLen(60, `{"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}}`), true, 1, []int{2, 0}, 0},
		{"test_whitespace_padded_header", withLen(6, "{}\x0D\x20\x09\x0A"), true, 0, nil, 0},
		{"test_json_attack", withLen(uint64(len(jsonAttack)), jsonAttack+zeros), false, 0, nil, 0},
		{"test_metadata_incomplete_buffer: extra bytes", withLen(60, `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`+zeros+"extra_bogus_data_for_polyglot_file"), false, 0, nil, 0},
		{"test_metadata_incomplete_buffer: missing bytes", withLen(60, `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`+zeros[:14]), false, 0, nil, 0},
		{"test_header_too_large", append([]byte("<\x00\x00\x00\x00\xff\xff\xff"), `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`+zeros...), false, 0, nil, 0},
		{"test_header_too_small", []byte{}, false, 0, nil, 0},
		{"test_invalid_header_length", withLen(60, ""), false, 0, nil, 0},
		{"test_invalid_header_non_utf8", withLen(1, "\xff"), false, 0, nil, 0},
		{"test_invalid_header_not_json", withLen(1, "{"), false, 0, nil, 0},
		{"test_invalid_info", withLen(60, `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0, 4]}}`), false, 0, nil, 0},
		{"test_validation_overflow: shape", withLen(79, `{"test":{"dtype":"I32","shape":[2,18446744073709551614],"data_offsets":[0,16]}}`+zeros), false, 0, nil, 0},
		{"test_validation_overflow: size", withLen(78, `{"test":{"dtype":"I32","shape":[2,9223372036854775807],"data_offsets":[0,16]}}`+zeros), false, 0, nil, 0},
		{"huge dimension beside a zero", withLen(78, `{"test":{"dtype":"I32","shape":[0,18446744073709551615],"data_offsets":[0,0]}}`), false, 0, nil, 0},
		{"repeated name", withLen(120, `{"test":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"test":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}}  `+zeros[:8]), false, 0, nil, 0},
		{"unknown dtype", withLen(56, `{"test":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}} `+zeros[:4]), false, 0, nil, 0},
		{"unknown field", withLen(64, `{"test":{"dtype":"I32","shape":[1],"data_offsets":[0,4],"x":1}}`+zeros[:4]), false, 0, nil, 0},
		{"header starts with a space", withLen(3, " {}"), false, 0, nil, 0},
		{"metadata not strings", withLen(24, `{"__metadata__":{"a":1}}`), false, 0, nil, 0},
	}
	for i, c := range cases {
		f, err := Decode(c.in)
		if !c.ok {
			if err == nil {
				t.Errorf("case %d (%s): decoded, want an error", i, c.name)
			} else if !errors.Is(err, Error) {
				t.Errorf("case %d (%s): error %v does not wrap safetensors.Error", i, c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("case %d (%s): %v", i, c.name, err)
			continue
		}
		if len(f.Tensors) != c.tensors {
			t.Errorf("case %d (%s): %d tensors, want %d", i, c.name, len(f.Tensors), c.tensors)
			continue
		}
		if c.tensors > 0 {
			tt := f.Tensors[0]
			if tt.Name != "test" || tt.DType != I32 || !sameShape(tt.Shape, c.shape) || len(tt.Data) != c.data {
				t.Errorf("case %d (%s): tensor %q %s %v with %d bytes", i, c.name, tt.Name, tt.DType, tt.Shape, len(tt.Data))
			}
		}
	}
}

// jsonAttack is test_json_attack's header: ten tensors that all claim
// bytes [0, 16) of a 16-byte buffer.
var jsonAttack = func() string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 10; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"weight_` + string(rune('0'+i)) + `":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}`)
	}
	b.WriteString("}")
	return b.String()
}()

// TestRoundTrip: several dtypes and names come back from Encode and Decode
// as they went in, sorted by name, with the wider dtypes laid out first
// (the reference writer's order) and every tensor's data aligned to its
// width.
func TestRoundTrip(t *testing.T) {
	in := File{
		Metadata: map[string]string{"protocol": "ptopofl.trainer/v1"},
		Tensors: []Tensor{
			{Name: "b", DType: U8, Shape: []int{3}, Data: []byte{1, 2, 3}},
			{Name: "a", DType: F64, Shape: []int{2}, Data: make([]byte, 16)},
			{Name: "c.weight", DType: F32, Shape: []int{2, 2}, Data: f32le(1, -2, 3.5, 1e-30)},
			{Name: "d", DType: I64, Shape: []int{}, Data: []byte{7, 0, 0, 0, 0, 0, 0, 0}},
		},
	}
	b, err := Encode(&in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.Metadata["protocol"] != "ptopofl.trainer/v1" || len(out.Tensors) != 4 {
		t.Fatalf("got %+v", out)
	}
	start := 8 + int(binary.LittleEndian.Uint64(b[:8]))
	for i, name := range []string{"a", "b", "c.weight", "d"} {
		got := out.Tensors[i]
		var want Tensor
		for _, w := range in.Tensors {
			if w.Name == name {
				want = w
			}
		}
		if got.Name != name || got.DType != want.DType || !sameShape(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("tensor %d: got %+v, want %+v", i, got, want)
		}
		w, _ := got.DType.Bits()
		if pos := int(offsetIn(b, got.Data)) - start; len(got.Data) > 0 && pos%(w/8) != 0 {
			t.Errorf("tensor %s: data at buffer offset %d, not aligned to %d bytes", name, pos, w/8)
		}
	}
	// Laid out by width: a (F64), d (I64), c.weight (F32), b (U8).
	order := []string{"a", "d", "c.weight", "b"}
	prev := -1
	for _, name := range order {
		tt, _ := out.Tensor(name)
		pos := int(offsetIn(b, tt.Data))
		if pos <= prev {
			t.Errorf("tensor %s at %d, not after the one before (%d): want layout %v", name, pos, prev, order)
		}
		prev = pos
	}
	if _, ok := out.Tensor("nope"); ok {
		t.Error("Tensor found a name that is not there")
	}
}

// offsetIn is the position of sub's first byte within b.
func offsetIn(b, sub []byte) uintptr {
	if len(sub) == 0 {
		return 0
	}
	for i := range b {
		if &b[i] == &sub[0] {
			return uintptr(i)
		}
	}
	return 0
}

// TestEncodeRefuses: what Encode will not write.
func TestEncodeRefuses(t *testing.T) {
	cases := []struct {
		name string
		f    File
	}{
		{"duplicate", File{Tensors: []Tensor{{Name: "a", DType: U8, Shape: []int{1}, Data: []byte{1}}, {Name: "a", DType: U8, Shape: []int{1}, Data: []byte{1}}}}},
		{"reserved name", File{Tensors: []Tensor{{Name: "__metadata__", DType: U8, Shape: []int{1}, Data: []byte{1}}}}},
		{"wrong size", File{Tensors: []Tensor{{Name: "a", DType: F32, Shape: []int{2}, Data: []byte{1, 2, 3, 4}}}}},
		{"negative dimension", File{Tensors: []Tensor{{Name: "a", DType: U8, Shape: []int{-1}, Data: nil}}}},
		{"unknown dtype", File{Tensors: []Tensor{{Name: "a", DType: "Q7", Shape: []int{1}, Data: []byte{1}}}}},
		{"partial byte", File{Tensors: []Tensor{{Name: "a", DType: F4, Shape: []int{3}, Data: []byte{1}}}}},
	}
	for i, c := range cases {
		if _, err := Encode(&c.f); err == nil || !errors.Is(err, Error) {
			t.Errorf("case %d (%s): error %v, want a safetensors error", i, c.name, err)
		}
	}
}

// TestFlattenUnflatten: a model's parameters in name order, F32 values
// widened exactly and narrowed back bit for bit, F64 as they are; the
// layout reproduces the file; non-float tensors and mismatched layouts are
// refused with messages that name tensors, never values.
func TestFlattenUnflatten(t *testing.T) {
	f64 := make([]byte, 16)
	binary.LittleEndian.PutUint64(f64, math.Float64bits(math.Pi))
	binary.LittleEndian.PutUint64(f64[8:], math.Float64bits(math.Copysign(0, -1)))
	in := &File{Tensors: []Tensor{
		{Name: "fc.bias", DType: F64, Shape: []int{2}, Data: f64},
		{Name: "fc.weight", DType: F32, Shape: []int{1, 3}, Data: f32le(0.1, float32(math.Inf(1)), -3)},
	}}
	params, layout, err := Flatten(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{math.Pi, math.Copysign(0, -1), float64(float32(0.1)), math.Inf(1), -3}
	if len(params) != len(want) {
		t.Fatalf("params %v, want %v", params, want)
	}
	for i := range want {
		if math.Float64bits(params[i]) != math.Float64bits(want[i]) {
			t.Errorf("param %d = %v, want %v", i, params[i], want[i])
		}
	}
	back, err := Unflatten(params, layout)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Encode(in)
	b, _ := Encode(back)
	if !bytes.Equal(a, b) {
		t.Error("Unflatten(Flatten(f)) does not encode to f's bytes")
	}
	// A value that is not a float32 is rounded to the nearest one.
	params[2] = 0.1
	back, err = Unflatten(params, layout)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := back.Tensor("fc.weight")
	if got := math.Float32frombits(binary.LittleEndian.Uint32(w.Data)); got != float32(0.1) {
		t.Errorf("0.1 written as %v", got)
	}
	if _, err := Unflatten(params[:4], layout); err == nil {
		t.Error("too few parameters: no error")
	}
	if _, _, err := Flatten(&File{Tensors: []Tensor{{Name: "n", DType: I64, Shape: []int{}, Data: make([]byte, 8)}}}); err == nil || !strings.Contains(err.Error(), `"n"`) {
		t.Errorf("an I64 tensor: error %v, want one naming it", err)
	}
	other := Layout{{Name: "fc.bias", DType: F64, Shape: []int{2}}, {Name: "fc.weight", DType: F32, Shape: []int{3, 1}}}
	cases := []struct {
		name string
		l    Layout
		want string
	}{
		{"same", layout, ""},
		{"shape", other, `tensor "fc.weight" has shape [1 3] in one model and [3 1] in the other`},
		{"count", layout[:1], "one model has 2 tensors, the other 1"},
		{"name", Layout{{Name: "x", DType: F64, Shape: []int{2}}, layout[1]}, `tensor 0 is "fc.bias" in one model and "x" in the other`},
		{"dtype", Layout{{Name: "fc.bias", DType: F32, Shape: []int{2}}, layout[1]}, `tensor "fc.bias" is F64 in one model and F32 in the other`},
	}
	for i, c := range cases {
		if got := layout.Mismatch(c.l); got != c.want {
			t.Errorf("case %d (%s): %q, want %q", i, c.name, got, c.want)
		}
	}
	if _, err := Unflatten(make([]float64, 4), Layout{{Name: "b", DType: F32, Shape: []int{2}}, {Name: "a", DType: F32, Shape: []int{2}}}); err == nil {
		t.Error("an unsorted layout: no error")
	}
	if _, err := Unflatten(nil, Layout{{Name: "a", DType: F32, Shape: []int{1 << 30, 1 << 30, 1 << 30}}}); err == nil {
		t.Error("a layout whose size overflows: no error")
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts survives
// Encode and Decode again unchanged (names, dtypes, shapes, bytes,
// metadata).
func FuzzDecode(f *testing.F) {
	seeds := [][]byte{
		withLen(60, `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`+strings.Repeat("\x00", 16)),
		withLen(56, `{"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}`+"\x00\x00\x00\x00"),
		withLen(6, "{}\x0D\x20\x09\x0A"),
		withLen(uint64(len(jsonAttack)), jsonAttack+strings.Repeat("\x00", 16)),
	}
	if b, err := Encode(&File{Metadata: map[string]string{"k": "v"}, Tensors: []Tensor{
		{Name: "w", DType: F32, Shape: []int{2}, Data: f32le(1, 2)},
		{Name: "q", DType: F4, Shape: []int{2}, Data: []byte{0x21}},
	}}); err == nil {
		seeds = append(seeds, b)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			if !errors.Is(err, Error) {
				t.Fatalf("error %v does not wrap safetensors.Error", err)
			}
			return
		}
		again, err := Encode(d)
		if err != nil {
			t.Fatalf("Encode of a decoded file: %v", err)
		}
		e, err := Decode(again)
		if err != nil {
			t.Fatalf("Decode of Encode's output: %v", err)
		}
		if len(e.Tensors) != len(d.Tensors) || len(e.Metadata) != len(d.Metadata) {
			t.Fatalf("round trip changed the file: %+v vs %+v", e, d)
		}
		for k, v := range d.Metadata {
			if e.Metadata[k] != v {
				t.Fatalf("metadata %q: %q vs %q", k, e.Metadata[k], v)
			}
		}
		for i := range d.Tensors {
			x, y := d.Tensors[i], e.Tensors[i]
			if x.Name != y.Name || x.DType != y.DType || !sameShape(x.Shape, y.Shape) || !bytes.Equal(x.Data, y.Data) {
				t.Fatalf("tensor %d: %+v vs %+v", i, x, y)
			}
		}
	})
}
