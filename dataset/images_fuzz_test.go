package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The readers take user files: whatever the bytes, they return images that
// validate or an error, and never panic.

func fuzzCheck(t *testing.T, im *Images, err error) {
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) && fe.Offset < 0 {
			t.Fatalf("negative offset in %v", err)
		}
		return
	}
	if im.Classes == 0 && im.N == 0 {
		return
	}
	if verr := im.Validate(); verr != nil {
		t.Fatalf("reader accepted data that does not validate: %v", verr)
	}
}

func FuzzReadIDX(f *testing.F) {
	f.Add(idxFile([]uint32{2, 2, 2}, []byte{0, 1, 2, 3, 4, 5, 6, 255}), idxFile([]uint32{2}, []byte{0, 1}))
	f.Add(gz(idxFile([]uint32{1, 1, 1, 1}, []byte{9})), idxFile([]uint32{1}, []byte{3}))
	f.Fuzz(func(t *testing.T, img, lab []byte) {
		dir := t.TempDir()
		ip, lp := filepath.Join(dir, "i"), filepath.Join(dir, "l")
		os.WriteFile(ip, img, 0o644)
		os.WriteFile(lp, lab, 0o644)
		im, err := ReadIDX(ip, lp)
		fuzzCheck(t, im, err)
	})
}

func FuzzReadCIFAR10(f *testing.F) {
	f.Add(cifarRecordBytes(3, 1, 2))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "b.bin")
		os.WriteFile(p, data, 0o644)
		im, err := ReadCIFAR10(p)
		fuzzCheck(t, im, err)
	})
}

func FuzzReadFEMNIST(f *testing.F) {
	f.Add([]byte(femnistJSON("0.25")))
	f.Add([]byte(`{"users": [], "num_samples": [], "user_data": {}}`))
	f.Add([]byte(`{"users": ["a"], "num_samples": [0], "user_data": {"a": {"x": [], "y": []}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.json")
		os.WriteFile(p, data, 0o644)
		im, err := ReadFEMNIST(p)
		fuzzCheck(t, im, err)
	})
}
