package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// FEMNIST as LEAF distributes it (Caldas et al. 2018): 28×28 grey images of
// handwritten digits and letters, 62 classes (10 digits, 26 upper-case and
// 26 lower-case letters), grouped by writer.
const (
	femnistSide    = 28
	femnistClasses = 62
)

// femnistUser is one writer's entry of "user_data".
type femnistUser struct {
	X [][]float32 `json:"x"`
	Y []int       `json:"y"`
}

// ReadFEMNIST reads LEAF's FEMNIST JSON files (all_data_*.json, or the
// train/test splits): one object per file with "users" (writer ids),
// "num_samples" (images per writer, in the same order) and "user_data",
// mapping each writer to {"x": [[784 pixels in [0, 1]], …], "y": [labels
// 0–61, …]}; other keys ("hierarchies") are ignored. Images come out in
// file order and, within a file, in the order of "users", as 28×28×1 with
// each image's writer in Writers.
//
// Malformed JSON, a file without images, a writer listed without data (or
// data without a listing), counts that disagree, an image without 784 pixels, a pixel outside [0, 1]
// or a label outside 0–61 is an error (a *FormatError naming the file and
// the byte offset of the JSON value, or of the writer's record).
func ReadFEMNIST(paths ...string) (*Images, error) {
	if len(paths) == 0 {
		return nil, errors.New("dataset: ReadFEMNIST needs at least one file")
	}
	im := &Images{H: femnistSide, W: femnistSide, C: 1, Classes: femnistClasses, Writers: []string{}}
	for _, p := range paths {
		if err := readFEMNISTFile(p, im); err != nil {
			return nil, err
		}
	}
	return im, nil
}

func readFEMNISTFile(path string, im *Images) error {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer closeFn()
	cr := &countingReader{r: r}
	dec := json.NewDecoder(cr)
	// valueStart returns the offset of the value after the key the decoder
	// has just returned: past the blanks and the colon.
	valueStart := func() int64 {
		off := dec.InputOffset()
		rest := dec.Buffered()
		var b [1]byte
		for {
			if n, _ := rest.Read(b[:]); n == 0 || !strings.ContainsRune(" \t\r\n:", rune(b[0])) {
				return off
			}
			off++
		}
	}
	var valueOff int64 // start of the value being decoded
	ferr := func(off int64, format string, a ...any) error {
		return &FormatError{File: path, Offset: off, Msg: fmt.Sprintf(format, a...)}
	}
	// jsonErr turns a decoding error into a FormatError at its offset.
	jsonErr := func(what string, err error) error {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
			return ferr(off, "%s: malformed JSON: %v", what, err)
		case errors.As(err, &te):
			// Decode reports the offset within the value it decodes.
			return ferr(valueOff+te.Offset, "%s: a JSON %s where a %s is expected", what, te.Value, te.Type)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return ferr(cr.n, "%s: file ends early", what)
		}
		return ferr(off, "%s: %v", what, err)
	}
	expectDelim := func(want json.Delim, what string) error {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return jsonErr(what, err)
		}
		if d, ok := tok.(json.Delim); !ok || d != want {
			return ferr(off, "%s: want %q", what, string(want))
		}
		return nil
	}
	if err := expectDelim('{', "top level"); err != nil {
		return err
	}
	var (
		users      []string
		numSamples []int
		seenUsers  bool
		seenNums   bool
		seenData   bool
		data       = map[string]femnistUser{}
		dataOff    = map[string]int64{}
		usersOff   int64
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonErr("top-level key", err)
		}
		key, _ := tok.(string)
		off := valueStart()
		valueOff = off
		switch key {
		case "users":
			usersOff, seenUsers = off, true
			if err := dec.Decode(&users); err != nil {
				return jsonErr(`"users"`, err)
			}
		case "num_samples":
			seenNums = true
			if err := dec.Decode(&numSamples); err != nil {
				return jsonErr(`"num_samples"`, err)
			}
		case "user_data":
			seenData = true
			if err := expectDelim('{', `"user_data"`); err != nil {
				return err
			}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return jsonErr(`"user_data" key`, err)
				}
				name, _ := tok.(string)
				recOff := valueStart()
				valueOff = recOff
				var u femnistUser
				if err := dec.Decode(&u); err != nil {
					return jsonErr(fmt.Sprintf("writer %q", name), err)
				}
				if _, dup := data[name]; dup {
					return ferr(recOff, "writer %q has two records", name)
				}
				data[name], dataOff[name] = u, recOff
			}
			if err := expectDelim('}', `end of "user_data"`); err != nil {
				return err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return jsonErr(fmt.Sprintf("%q", key), err)
			}
		}
	}
	if err := expectDelim('}', "end of the top-level object"); err != nil {
		return err
	}
	end := dec.InputOffset()
	switch {
	case !seenUsers:
		return ferr(end, `no "users" key`)
	case !seenNums:
		return ferr(end, `no "num_samples" key`)
	case !seenData:
		return ferr(end, `no "user_data" key`)
	case len(users) != len(numSamples):
		return ferr(usersOff, `%d users but %d "num_samples" entries`, len(users), len(numSamples))
	case len(users) != len(data):
		return ferr(usersOff, `%d users listed but %d writers in "user_data"`, len(users), len(data))
	}
	const size = femnistSide * femnistSide
	total := 0
	for _, n := range numSamples {
		total += n
	}
	if total == 0 {
		return ferr(usersOff, "no images: every writer has 0 samples")
	}
	for i, name := range users {
		u, ok := data[name]
		if !ok {
			return ferr(usersOff, "writer %q is listed in \"users\" but has no record in \"user_data\"", name)
		}
		off := dataOff[name]
		if len(u.X) != numSamples[i] || len(u.Y) != numSamples[i] {
			return ferr(off, "writer %q: %d images and %d labels, \"num_samples\" says %d", name, len(u.X), len(u.Y), numSamples[i])
		}
		for j, x := range u.X {
			if len(x) != size {
				return ferr(off, "writer %q image %d has %d pixels, want %d", name, j, len(x), size)
			}
			for _, v := range x {
				if !(v >= 0 && v <= 1) {
					return ferr(off, "writer %q image %d has a pixel outside [0, 1]", name, j)
				}
			}
			if y := u.Y[j]; y < 0 || y >= femnistClasses {
				return ferr(off, "writer %q image %d has a label outside 0–61", name, j)
			}
			im.Pixels = append(im.Pixels, x...)
			im.Labels = append(im.Labels, u.Y[j])
			im.Writers = append(im.Writers, name)
			im.N++
		}
	}
	return nil
}

// countingReader counts the bytes read through it, which is the file's
// length once the decoder has hit its end.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
