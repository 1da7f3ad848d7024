// Package safetensors reads and writes the safetensors format
// (huggingface/safetensors, format version of 2026): the file a site's own
// trainer exchanges models in under the trainer protocol
// (ptopofl.trainer/v1). It knows bytes only, no files or network.
//
// The format: bytes 0–7 hold N, the header length as a little-endian
// uint64; the next N bytes are a UTF-8 JSON object that starts with "{"
// and may be right-padded with JSON white space, mapping each tensor's name
// to {"dtype", "shape", "data_offsets": [BEGIN, END]} and the optional key
// "__metadata__" to a string→string object; the rest of the file is the
// byte buffer, in which each tensor's little-endian, row-major data lies at
// [BEGIN, END) relative to the buffer's start. Decode enforces what the
// reference reader does (safetensors/src/tensor.rs, Metadata::validate):
// a header of at most MaxHeaderSize bytes, no duplicate names, tensors
// that tile the buffer from 0 with no hole or overlap, END−BEGIN equal to
// the element count times the dtype's width, and no byte after the last
// tensor. One limit is ours: a dimension above 2^31−1 is refused even
// beside a zero (the reference accepts any that keeps the product in
// range; no model has one, and it keeps every shape an int).
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderSize is the largest header Decode accepts, the reference
// reader's MAX_HEADER_SIZE (100,000,000 bytes).
const MaxHeaderSize = 100_000_000

// metadataKey is the header key of the string→string metadata.
const metadataKey = "__metadata__"

// DType names an element type as the format spells it.
type DType string

// The element types of the format, with their widths in bits (dtypeBits).
const (
	Bool       DType = "BOOL"
	U8         DType = "U8"
	I8         DType = "I8"
	F8E5M2     DType = "F8_E5M2"
	F8E4M3     DType = "F8_E4M3"
	F8E8M0     DType = "F8_E8M0"
	F8E4M3FNUZ DType = "F8_E4M3FNUZ"
	F8E5M2FNUZ DType = "F8_E5M2FNUZ"
	I16        DType = "I16"
	U16        DType = "U16"
	F16        DType = "F16"
	BF16       DType = "BF16"
	I32        DType = "I32"
	U32        DType = "U32"
	F32        DType = "F32"
	F64        DType = "F64"
	I64        DType = "I64"
	U64        DType = "U64"
	C64        DType = "C64"
	F4         DType = "F4"
	F6E2M3     DType = "F6_E2M3"
	F6E3M2     DType = "F6_E3M2"
)

// dtypeBits is the width of one element of each dtype, in bits (the
// reference's Dtype::bitsize).
var dtypeBits = map[DType]int{
	Bool: 8, U8: 8, I8: 8, F8E5M2: 8, F8E4M3: 8, F8E8M0: 8, F8E4M3FNUZ: 8, F8E5M2FNUZ: 8,
	I16: 16, U16: 16, F16: 16, BF16: 16,
	I32: 32, U32: 32, F32: 32,
	F64: 64, I64: 64, U64: 64, C64: 64,
	F4: 4, F6E2M3: 6, F6E3M2: 6,
}

// Bits returns the width of one element of d in bits, and false for a
// dtype the format does not define.
func (d DType) Bits() (int, bool) {
	b, ok := dtypeBits[d]
	return b, ok
}

// Tensor is one named tensor. Data holds its elements, little-endian and
// row-major; after Decode it aliases the decoded buffer.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// File is a decoded safetensors file: its tensors sorted by name
// (byte-wise) and its metadata (nil when the header has none).
type File struct {
	Tensors  []Tensor
	Metadata map[string]string
}

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (Tensor, bool) {
	i, ok := slices.BinarySearchFunc(f.Tensors, name, func(t Tensor, n string) int {
		switch {
		case t.Name < n:
			return -1
		case t.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return Tensor{}, false
	}
	return f.Tensors[i], true
}

// info is a tensor's header entry.
type info struct {
	DType       DType    `json:"dtype"`
	Shape       []uint64 `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// Error is a malformed file: Decode's and Encode's errors all wrap it, so
// that a caller can tell a bad model from a failure to read one.
var Error = errors.New("safetensors")

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", Error, fmt.Sprintf(format, args...))
}

// Decode parses and validates b. The tensors' Data alias b.
func Decode(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, errorf("file of %d bytes: shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeaderSize {
		return nil, errorf("header length %d: over the limit of %d bytes", n, MaxHeaderSize)
	}
	if n > uint64(len(b)-8) {
		return nil, errorf("header length %d: the file has only %d bytes after it", n, len(b)-8)
	}
	header, buf := b[8:8+n], b[8+n:]
	if !utf8.Valid(header) {
		return nil, errorf("header is not UTF-8")
	}
	if len(header) == 0 || header[0] != '{' {
		return nil, errorf("header does not start with '{'")
	}
	entries, meta, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	// Sorted by offset, the tensors must tile the buffer from 0.
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := entries[order[a]].info.DataOffsets, entries[order[b]].info.DataOffsets
		if ea[0] != eb[0] {
			return ea[0] < eb[0]
		}
		return ea[1] < eb[1]
	})
	var end uint64
	f := &File{Metadata: meta, Tensors: make([]Tensor, 0, len(entries))}
	for _, i := range order {
		e := entries[i]
		begin, stop := e.info.DataOffsets[0], e.info.DataOffsets[1]
		if begin != end || stop < begin {
			return nil, errorf("tensor %q: data_offsets [%d, %d] do not follow the previous tensor's end %d", e.name, begin, stop, end)
		}
		size, err := byteSize(e.info.DType, e.info.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", e.name, err)
		}
		if stop-begin != size {
			return nil, errorf("tensor %q: %d bytes of data for %s of shape %v (%d bytes)", e.name, stop-begin, e.info.DType, e.info.Shape, size)
		}
		end = stop
		shape := make([]int, len(e.info.Shape))
		for k, d := range e.info.Shape {
			shape[k] = int(d) // byteSize bounded each dimension
		}
		f.Tensors = append(f.Tensors, Tensor{Name: e.name, DType: e.info.DType, Shape: shape, Data: buf[begin:stop:stop]})
	}
	if end != uint64(len(buf)) {
		return nil, errorf("the tensors end at byte %d of a %d-byte buffer", end, len(buf))
	}
	slices.SortFunc(f.Tensors, func(a, b Tensor) int { return bytes.Compare([]byte(a.Name), []byte(b.Name)) })
	return f, nil
}

type entry struct {
	name string
	info info
}

// parseHeader reads the header object key by key, so that a repeated name
// is an error rather than the last one silently winning.
func parseHeader(header []byte) ([]entry, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errorf("header is not a JSON object")
	}
	seen := map[string]bool{}
	var entries []entry
	var meta map[string]string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, errorf("header: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, errorf("header: a key that is not a string")
		}
		if seen[name] {
			return nil, nil, errorf("header: %q appears twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, errorf("header: the value of %q: %v", name, err)
		}
		if name == metadataKey {
			if err := strictUnmarshal(raw, &meta); err != nil {
				return nil, nil, errorf("header: %s must map strings to strings: %v", metadataKey, err)
			}
			continue
		}
		var in info
		if err := strictUnmarshal(raw, &in); err != nil {
			return nil, nil, errorf("header: tensor %q: %v", name, err)
		}
		if _, ok := in.DType.Bits(); !ok {
			return nil, nil, errorf("header: tensor %q: unknown dtype %q", name, in.DType)
		}
		if in.Shape == nil || len(in.DataOffsets) != 2 {
			return nil, nil, errorf("header: tensor %q: want a shape and two data_offsets", name)
		}
		entries = append(entries, entry{name: name, info: in})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, errorf("header: %v", err)
	}
	// Only JSON white space may follow the object (the padding).
	rest := header[dec.InputOffset():]
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, nil, errorf("header: bytes after the JSON object that are not white space")
	}
	return entries, meta, nil
}

// strictUnmarshal decodes raw into v, refusing unknown fields.
func strictUnmarshal(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// byteSize is the size in bytes of a tensor of dtype d and shape, with
// every overflow an error (the reference's ValidationOverflow) and a
// sub-byte total that does not fill whole bytes refused.
func byteSize(d DType, shape []uint64) (uint64, error) {
	width, ok := d.Bits()
	if !ok {
		return 0, errorf("unknown dtype %q", d)
	}
	n := uint64(1)
	for _, s := range shape {
		if s > math.MaxInt32 {
			// Even with another dimension 0: a dimension must fit an int.
			return 0, errorf("shape %v: dimension %d too large", shape, s)
		}
		hi, lo := bits.Mul64(n, s)
		if hi != 0 || lo > math.MaxInt64 {
			return 0, errorf("shape %v: the element count overflows", shape)
		}
		n = lo
	}
	hi, total := bits.Mul64(n, uint64(width))
	if hi != 0 || total > math.MaxInt64 {
		return 0, errorf("shape %v of %s: the size overflows", shape, d)
	}
	if total%8 != 0 {
		return 0, errorf("shape %v of %s: %d bits, not a whole number of bytes", shape, d, total)
	}
	return total / 8, nil
}

// Encode writes f as the reference writer does (safetensors'
// serialize): tensors laid out in the buffer by decreasing element width
// and then by name, the header listing "__metadata__" first and then the
// tensors in that order, compact JSON, right-padded with spaces to a
// multiple of 8 bytes so that every tensor's data is aligned. Names must
// be unique and not "__metadata__"; each tensor's Data must have the size
// its dtype and shape give.
func Encode(f *File) ([]byte, error) {
	ts := slices.Clone(f.Tensors)
	seen := map[string]bool{}
	for _, t := range ts {
		if t.Name == metadataKey {
			return nil, errorf("a tensor may not be named %s", metadataKey)
		}
		if seen[t.Name] {
			return nil, errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		shape := make([]uint64, len(t.Shape))
		for i, s := range t.Shape {
			if s < 0 {
				return nil, errorf("tensor %q: negative dimension in shape %v", t.Name, t.Shape)
			}
			shape[i] = uint64(s)
		}
		size, err := byteSize(t.DType, shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if uint64(len(t.Data)) != size {
			return nil, errorf("tensor %q: %d bytes of data for %s of shape %v (%d bytes)", t.Name, len(t.Data), t.DType, t.Shape, size)
		}
	}
	slices.SortStableFunc(ts, func(a, b Tensor) int {
		wa, _ := a.DType.Bits()
		wb, _ := b.DType.Bits()
		if wa != wb {
			return wb - wa
		}
		return bytes.Compare([]byte(a.Name), []byte(b.Name))
	})
	var h bytes.Buffer
	h.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			h.WriteByte(',')
		}
		first = false
	}
	if f.Metadata != nil {
		sep()
		writeString(&h, metadataKey)
		h.WriteString(":{")
		keys := make([]string, 0, len(f.Metadata))
		for k := range f.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				h.WriteByte(',')
			}
			writeString(&h, k)
			h.WriteByte(':')
			writeString(&h, f.Metadata[k])
		}
		h.WriteByte('}')
	}
	var off uint64
	for _, t := range ts {
		sep()
		writeString(&h, t.Name)
		h.WriteString(`:{"dtype":`)
		writeString(&h, string(t.DType))
		h.WriteString(`,"shape":[`)
		for i, s := range t.Shape {
			if i > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(s))
		}
		end := off + uint64(len(t.Data))
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	out := make([]byte, 8, 8+h.Len()+int(off))
	binary.LittleEndian.PutUint64(out, uint64(h.Len()))
	out = append(out, h.Bytes()...)
	for _, t := range ts {
		out = append(out, t.Data...)
	}
	return out, nil
}

// writeString writes s as a JSON string without HTML escaping, as
// serde_json does for every name without control characters or U+2028 and
// U+2029 (which Go escapes differently; both read back the same).
func writeString(b *bytes.Buffer, s string) {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(enc.Bytes(), []byte{'\n'}))
}
