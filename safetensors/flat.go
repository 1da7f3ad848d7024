package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Layout is where each tensor of a model lies in its flat parameter
// vector: the tensors in the order of their names sorted byte-wise (the
// order of File.Tensors), each with its dtype and shape. The trainer
// protocol (ptopofl.trainer/v1) stores a site's model as that vector, and
// writes an aggregated vector back to a file of the same layout.
type Layout []TensorLayout

// TensorLayout is one tensor's entry in a Layout.
type TensorLayout struct {
	Name  string `json:"name"`
	DType DType  `json:"dtype"`
	Shape []int  `json:"shape"`
}

// Size is the number of parameters the layout holds.
func (l Layout) Size() int {
	n := 0
	for _, t := range l {
		n += numel(t.Shape)
	}
	return n
}

// Equal reports whether l and m name the same tensors with the same dtypes
// and shapes, in the same order; Mismatch says where they first differ.
func (l Layout) Equal(m Layout) bool { return l.Mismatch(m) == "" }

// Mismatch describes the first difference between l and m, "" when there
// is none. It names tensors, dtypes and shapes only, never a value.
func (l Layout) Mismatch(m Layout) string {
	for i := 0; i < len(l) && i < len(m); i++ {
		a, b := l[i], m[i]
		switch {
		case a.Name != b.Name:
			return fmt.Sprintf("tensor %d is %q in one model and %q in the other", i, a.Name, b.Name)
		case a.DType != b.DType:
			return fmt.Sprintf("tensor %q is %s in one model and %s in the other", a.Name, a.DType, b.DType)
		case !sameShape(a.Shape, b.Shape):
			return fmt.Sprintf("tensor %q has shape %v in one model and %v in the other", a.Name, a.Shape, b.Shape)
		}
	}
	if len(l) != len(m) {
		return fmt.Sprintf("one model has %d tensors, the other %d", len(l), len(m))
	}
	return ""
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// Flatten returns f's parameters as one vector, tensor after tensor in the
// order of their names sorted byte-wise, each row-major, and the layout
// that Unflatten needs to write them back. Only F32 and F64 tensors are
// model parameters; any other dtype is an error naming the tensor (a
// trainer must leave integer buffers such as BatchNorm's
// num_batches_tracked out of the model it sends).
func Flatten(f *File) ([]float64, Layout, error) {
	layout := make(Layout, 0, len(f.Tensors))
	n := 0
	for _, t := range f.Tensors {
		if t.DType != F32 && t.DType != F64 {
			return nil, nil, errorf("tensor %q is %s: a model's tensors must be F32 or F64", t.Name, t.DType)
		}
		layout = append(layout, TensorLayout{Name: t.Name, DType: t.DType, Shape: append([]int(nil), t.Shape...)})
		n += numel(t.Shape)
	}
	out := make([]float64, 0, n)
	for _, t := range f.Tensors {
		switch t.DType {
		case F32:
			for i := 0; i < len(t.Data); i += 4 {
				out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[i:]))))
			}
		case F64:
			for i := 0; i < len(t.Data); i += 8 {
				out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(t.Data[i:])))
			}
		}
	}
	return out, layout, nil
}

// Unflatten writes params back into tensors of layout (the inverse of
// Flatten): F64 tensors take the values as they are, F32 tensors the
// values rounded to the nearest float32 (Go's conversion, round half to
// even), so a vector Flatten read from an F32 file comes back bit for bit.
func Unflatten(params []float64, layout Layout) (*File, error) {
	for _, t := range layout {
		shape := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			if d < 0 {
				return nil, errorf("layout: tensor %q has a negative dimension in shape %v", t.Name, t.Shape)
			}
			shape[i] = uint64(d)
		}
		if _, err := byteSize(t.DType, shape); err != nil { // bounds every dimension and the product
			return nil, fmt.Errorf("layout: tensor %q: %w", t.Name, err)
		}
	}
	if len(params) != layout.Size() {
		return nil, errorf("%d parameters for a layout of %d", len(params), layout.Size())
	}
	f := &File{Tensors: make([]Tensor, 0, len(layout))}
	off := 0
	for i, t := range layout {
		if i > 0 && layout[i-1].Name >= t.Name {
			return nil, errorf("layout: tensor %q after %q: names must be sorted and unique", t.Name, layout[i-1].Name)
		}
		n := numel(t.Shape)
		var data []byte
		switch t.DType {
		case F32:
			data = make([]byte, 4*n)
			for k, v := range params[off : off+n] {
				binary.LittleEndian.PutUint32(data[4*k:], math.Float32bits(float32(v)))
			}
		case F64:
			data = make([]byte, 8*n)
			for k, v := range params[off : off+n] {
				binary.LittleEndian.PutUint64(data[8*k:], math.Float64bits(v))
			}
		default:
			return nil, errorf("layout: tensor %q is %s: only F32 and F64 are model parameters", t.Name, t.DType)
		}
		off += n
		f.Tensors = append(f.Tensors, Tensor{Name: t.Name, DType: t.DType, Shape: append([]int(nil), t.Shape...), Data: data})
	}
	return f, nil
}
