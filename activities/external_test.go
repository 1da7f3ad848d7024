package activities

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/safetensors"
	"github.com/ptopofl/ptopofl/trainer"
)

// f32 is an F32 tensor of the given values.
func f32(name string, shape []int, v ...float32) safetensors.Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: b}
}

func writeTensors(t *testing.T, ts ...safetensors.Tensor) string {
	t.Helper()
	b, err := safetensors.Encode(&safetensors.File{Tensors: ts})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "out.safetensors")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeBytes(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out.safetensors")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadModelOut: every way a program's model file breaks the protocol
// is named by its kind (and a tensor by its name only when that is an
// identifier), and a good file is flattened in name order.
func TestReadModelOut(t *testing.T) {
	i64 := safetensors.Tensor{Name: "bn.num_batches_tracked", DType: safetensors.I64, Shape: []int{}, Data: make([]byte, 8)}
	for i, c := range []struct {
		path     string
		kind     string
		contains string
	}{
		0: {filepath.Join(t.TempDir(), "none"), trainer.KindMissingOutput, "no model file"},
		1: {writeBytes(t, []byte("not safetensors at all")), trainer.KindMalformedSafetensors, "not a valid safetensors"},
		2: {writeBytes(t, []byte{0x08, 0, 0, 0, 0, 0, 0, 0, '{', '}'}), trainer.KindMalformedSafetensors, "not a valid safetensors"}, // header past the end
		3: {writeTensors(t, f32("w", []int{2}, 1, 2), i64), trainer.KindUnsupportedDType, `tensor "bn.num_batches_tracked" is I64`},
		4: {writeTensors(t, f32("w", []int{2}, 1, 2), safetensors.Tensor{Name: "secret 3.14", DType: safetensors.I32, Shape: []int{1}, Data: make([]byte, 4)}),
			trainer.KindUnsupportedDType, "tensor #0 is I32"}, // sorted: "secret 3.14" < "w"
		5: {writeTensors(t, f32("a", []int{1}, 0), f32("w", []int{2}, 1, float32(math.NaN()))), trainer.KindNonFiniteModel, `parameter 2 (of tensor "w")`},
		6: {writeTensors(t, f32("w", []int{1}, float32(math.Inf(-1)))), trainer.KindNonFiniteModel, "parameter 0"},
		7: {writeTensors(t), trainer.KindLayoutMismatch, "no parameters"},
	} {
		_, _, f := readModelOut(c.path)
		if f == nil || f.Kind != c.kind || !strings.Contains(f.Detail, c.contains) {
			t.Errorf("%d: fault %v, want %s containing %q", i, f, c.kind, c.contains)
		}
	}
	params, layout, f := readModelOut(writeTensors(t, f32("b", []int{1}, 3), f32("a", []int{2}, 1, 2)))
	if f != nil || len(params) != 3 || params[0] != 1 || params[2] != 3 || layout[0].Name != "a" {
		t.Errorf("good file: %v %v %v", params, layout, f)
	}
}

// TestReadEmbeddings: the embed task's file: missing, malformed, without
// its tensor, of another dtype or shape, or not finite, each named.
func TestReadEmbeddings(t *testing.T) {
	for i, c := range []struct {
		path string
		kind string
	}{
		0: {filepath.Join(t.TempDir(), "none"), trainer.KindMissingOutput},
		1: {writeBytes(t, []byte("{}")), trainer.KindMalformedSafetensors},
		2: {writeTensors(t, f32("emb", []int{2, 1}, 1, 2)), trainer.KindLayoutMismatch},
		3: {writeTensors(t, f32("embeddings", []int{3, 1}, 1, 2, 3)), trainer.KindLayoutMismatch},
		4: {writeTensors(t, safetensors.Tensor{Name: "embeddings", DType: safetensors.I64, Shape: []int{2, 1}, Data: make([]byte, 16)}), trainer.KindUnsupportedDType},
		5: {writeTensors(t, f32("embeddings", []int{2, 1}, 1, float32(math.NaN()))), trainer.KindNonFiniteEmbedding},
	} {
		if _, f := readEmbeddings(c.path, 2); f == nil || f.Kind != c.kind {
			t.Errorf("%d: fault %v, want %s", i, f, c.kind)
		}
	}
	x, f := readEmbeddings(writeTensors(t, f32("embeddings", []int{2, 2}, 1, 2, 3, 4)), 2)
	if f != nil || len(x) != 2 || x[1][0] != 3 {
		t.Errorf("good file: %v %v", x, f)
	}
}
