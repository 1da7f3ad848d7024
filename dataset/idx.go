package dataset

import (
	"encoding/binary"
	"fmt"
	"io"
)

// idxUnsignedByte is the IDX type code of unsigned bytes, the only one the
// MNIST-family files use.
const idxUnsignedByte = 0x08

// ReadIDX reads an image file and a label file in the IDX format of MNIST
// and Fashion-MNIST (LeCun et al.; http://yann.lecun.com/exdb/mnist/): a
// header of two zero bytes, the type code 0x08 (unsigned byte) and the
// number of dimensions, each dimension as a big-endian uint32, then the
// values row-major. Images have 3 dimensions (N, rows, columns; one
// channel) or 4 (N, rows, columns, channels); labels have 1 (N). Either
// file may be gzip-compressed. Pixels are scaled from 0–255 to [0, 1]; the
// number of classes is 1 + the largest label.
//
// A wrong magic number, type or dimension count, a zero dimension, a file
// that ends before its declared size or continues after it, and label
// files whose count differs from the image count are errors (a
// *FormatError naming file and byte offset where it applies).
func ReadIDX(imagePath, labelPath string) (*Images, error) {
	pix, dims, err := readIDXFile(imagePath, 3, 4)
	if err != nil {
		return nil, err
	}
	lab, ldims, err := readIDXFile(labelPath, 1, 1)
	if err != nil {
		return nil, err
	}
	if ldims[0] != dims[0] {
		return nil, &FormatError{File: labelPath, Offset: 4, Msg: fmt.Sprintf("%d labels for the %d images of %s", ldims[0], dims[0], imagePath)}
	}
	im := &Images{N: dims[0], H: dims[1], W: dims[2], C: 1}
	if len(dims) == 4 {
		im.C = dims[3]
	}
	im.Pixels = make([]float32, len(pix))
	for i, b := range pix {
		im.Pixels[i] = float32(b) / 255
	}
	im.Labels = make([]int, len(lab))
	for i, b := range lab {
		im.Labels[i] = int(b)
		im.Classes = max(im.Classes, int(b)+1)
	}
	return im, nil
}

// readIDXFile reads one IDX file of unsigned bytes with between minDims and
// maxDims dimensions and returns its values and dimensions.
func readIDXFile(path string, minDims, maxDims int) ([]byte, []int, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: %w", err)
	}
	defer closeFn()
	ferr := func(off int64, format string, a ...any) error {
		return &FormatError{File: path, Offset: off, Msg: fmt.Sprintf(format, a...)}
	}
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, nil, ferr(0, "file ends inside the 4-byte IDX header")
	}
	if head[0] != 0 || head[1] != 0 {
		return nil, nil, ferr(0, "not an IDX file: the magic number must start with two zero bytes")
	}
	if head[2] != idxUnsignedByte {
		return nil, nil, ferr(2, "IDX type code 0x%02x: only 0x08 (unsigned byte) is supported", head[2])
	}
	nd := int(head[3])
	if nd < minDims || nd > maxDims {
		return nil, nil, ferr(3, "%d dimensions: want %d to %d", nd, minDims, maxDims)
	}
	dims := make([]int, nd)
	total := 1
	for i := range dims {
		var d [4]byte
		off := int64(4 + 4*i)
		if _, err := io.ReadFull(r, d[:]); err != nil {
			return nil, nil, ferr(off, "file ends inside dimension %d of the header", i)
		}
		v := binary.BigEndian.Uint32(d[:])
		if v == 0 {
			return nil, nil, ferr(off, "dimension %d is 0", i)
		}
		if v > 1<<30 || total > (1<<34)/int(v) {
			return nil, nil, ferr(off, "dimensions too large")
		}
		dims[i] = int(v)
		total *= int(v)
	}
	start := int64(4 + 4*nd)
	// Read what the file holds, up to one byte more than declared, rather
	// than allocating the declared size: a corrupt header must not make us
	// allocate gigabytes before finding the file short.
	data, err := io.ReadAll(io.LimitReader(r, int64(total)+1))
	if err != nil {
		return nil, nil, ferr(start+int64(len(data)), "read: %v", err)
	}
	if len(data) < total {
		return nil, nil, ferr(start+int64(len(data)), "file is truncated: the header declares %d values, the file holds %d", total, len(data))
	}
	if len(data) > total {
		return nil, nil, ferr(start+int64(total), "unexpected data after the %d values the header declares", total)
	}
	return data, dims, nil
}
