package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// Images is a labelled set of images: N images of H rows, W columns and C
// channels, their pixels scaled to [0, 1] and stored NHWC (image, row,
// column, channel) in one slice, one class label per image in [0,
// Classes), and for data sets that record it the writer (author) of each
// image, which writer-based federated partitions group by. It is the form
// package nn trains on: nn.Data{N: im.N, X: im.Pixels, Labels: im.Labels}.
type Images struct {
	N, H, W, C int
	Classes    int
	Pixels     []float32
	Labels     []int
	// Writers holds each image's writer, or is nil if the format has none.
	Writers []string
}

// Validate returns an error naming the first inconsistency: no images, a
// non-positive dimension, a pixel or label count that does not match N, a
// label outside [0, Classes), a pixel outside [0, 1] or not finite (by
// image index, never by value), or a writer count other than N.
func (im *Images) Validate() error {
	switch {
	case im.N < 1:
		return fmt.Errorf("dataset: no images")
	case im.H < 1 || im.W < 1 || im.C < 1:
		return fmt.Errorf("dataset: image shape %dx%dx%d: every dimension must be at least 1", im.H, im.W, im.C)
	case im.Classes < 1:
		return fmt.Errorf("dataset: %d classes: want at least 1", im.Classes)
	case len(im.Pixels) != im.N*im.H*im.W*im.C:
		return fmt.Errorf("dataset: %d pixel values for %d images of %dx%dx%d", len(im.Pixels), im.N, im.H, im.W, im.C)
	case len(im.Labels) != im.N:
		return fmt.Errorf("dataset: %d labels for %d images", len(im.Labels), im.N)
	case im.Writers != nil && len(im.Writers) != im.N:
		return fmt.Errorf("dataset: %d writers for %d images", len(im.Writers), im.N)
	}
	for i, y := range im.Labels {
		if y < 0 || y >= im.Classes {
			return fmt.Errorf("dataset: image %d has a label outside [0, %d)", i, im.Classes)
		}
	}
	size := im.H * im.W * im.C
	for i, v := range im.Pixels {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("dataset: image %d has a pixel outside [0, 1]", i/size)
		}
	}
	return nil
}

// Size returns the number of values per image, H·W·C.
func (im *Images) Size() int { return im.H * im.W * im.C }

// Subset returns the images at the given indices, in that order, as a new
// Images sharing nothing with im. It panics if an index is out of range.
func (im *Images) Subset(idx []int) *Images {
	size := im.Size()
	out := &Images{N: len(idx), H: im.H, W: im.W, C: im.C, Classes: im.Classes,
		Pixels: make([]float32, len(idx)*size), Labels: make([]int, len(idx))}
	if im.Writers != nil {
		out.Writers = make([]string, len(idx))
	}
	for k, i := range idx {
		copy(out.Pixels[k*size:(k+1)*size], im.Pixels[i*size:(i+1)*size])
		out.Labels[k] = im.Labels[i]
		if im.Writers != nil {
			out.Writers[k] = im.Writers[i]
		}
	}
	return out
}

// FormatError is a problem with the contents of an image or label file: it
// names the file and the byte offset where the problem lies (offsets in a
// gzip-compressed file count decompressed bytes) and never a pixel value.
type FormatError struct {
	File   string
	Offset int64
	Msg    string
}

// Error returns "file: byte offset N: message".
func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: byte offset %d: %s", e.File, e.Offset, e.Msg)
}

// openMaybeGzip opens path and, if it starts with the gzip magic bytes,
// decompresses it (Debian's dataset-fashion-mnist ships .gz files).
func openMaybeGzip(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, _ := br.Peek(2)
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, &FormatError{File: path, Offset: 0, Msg: fmt.Sprintf("gzip header: %v", err)}
		}
		return bufio.NewReaderSize(zr, 1<<16), f.Close, nil
	}
	return br, f.Close, nil
}
