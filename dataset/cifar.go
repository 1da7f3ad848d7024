package dataset

import (
	"errors"
	"fmt"
	"io"
)

// CIFAR-10's binary record: one label byte, then 32×32 red, 32×32 green and
// 32×32 blue bytes, each plane row-major.
const (
	cifarSide    = 32
	cifarClasses = 10
	cifarRecord  = 1 + 3*cifarSide*cifarSide
)

// ReadCIFAR10 reads files in the binary format of CIFAR-10 (Krizhevsky
// 2009; data_batch_1.bin … data_batch_5.bin, test_batch.bin: records of
// 3073 bytes, a label 0–9 then the red, green and blue planes) and returns
// their images in file order as 32×32×3 NHWC with pixels in [0, 1]. Files
// may be gzip-compressed. An empty file, a file whose length is not a
// multiple of 3073 (truncated) or a label byte above 9 is an error (a
// *FormatError naming file and byte offset).
func ReadCIFAR10(paths ...string) (*Images, error) {
	if len(paths) == 0 {
		return nil, errors.New("dataset: ReadCIFAR10 needs at least one file")
	}
	im := &Images{H: cifarSide, W: cifarSide, C: 3, Classes: cifarClasses}
	for _, p := range paths {
		if err := readCIFARFile(p, im); err != nil {
			return nil, err
		}
	}
	return im, nil
}

func readCIFARFile(path string, im *Images) error {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer closeFn()
	var rec [cifarRecord]byte
	const plane = cifarSide * cifarSide
	for k := int64(0); ; k++ {
		off := k * cifarRecord
		n, err := io.ReadFull(r, rec[:])
		if err == io.EOF {
			if k == 0 {
				return &FormatError{File: path, Offset: 0, Msg: "empty file: no CIFAR-10 records"}
			}
			return nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return &FormatError{File: path, Offset: off + int64(n), Msg: fmt.Sprintf("file is truncated inside record %d (records are %d bytes)", k, cifarRecord)}
			}
			return &FormatError{File: path, Offset: off + int64(n), Msg: fmt.Sprintf("read: %v", err)}
		}
		if rec[0] >= cifarClasses {
			return &FormatError{File: path, Offset: off, Msg: fmt.Sprintf("record %d has a label byte outside 0–9", k)}
		}
		im.Labels = append(im.Labels, int(rec[0]))
		base := len(im.Pixels)
		im.Pixels = append(im.Pixels, make([]float32, 3*plane)...)
		px := im.Pixels[base:]
		for p := range plane {
			for c := range 3 {
				px[p*3+c] = float32(rec[1+c*plane+p]) / 255
			}
		}
		im.N++
	}
}
