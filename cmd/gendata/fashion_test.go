package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/dataset"
)

// writeGzipIDX writes a gzip-compressed IDX file of unsigned bytes.
func writeGzipIDX(t *testing.T, path string, dims []uint32, data []byte) {
	t.Helper()
	var raw bytes.Buffer
	raw.Write([]byte{0, 0, 0x08, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&raw, binary.BigEndian, d)
	}
	raw.Write(data)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(raw.Bytes())
	w.Close()
	if err := os.WriteFile(path, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFashionMNIST runs `gendata fashion-mnist` on a tiny stand-in for
// the Debian files (8×8 images, 4 classes) and reads the federation back;
// without the files it names them, and without Debian's package and with
// --no-install it names the package and the command that installs it.
func TestFashionMNIST(t *testing.T) {
	src := t.TempDir()
	for i, n := range []int{200, 80} {
		pix := make([]byte, n*64)
		for j := range pix {
			pix[j] = byte(j * 7)
		}
		lab := make([]byte, n)
		for j := range lab {
			lab[j] = byte(j % 4)
		}
		writeGzipIDX(t, filepath.Join(src, dataset.FashionMNISTFiles[2*i]), []uint32{uint32(n), 8, 8}, pix)
		writeGzipIDX(t, filepath.Join(src, dataset.FashionMNISTFiles[2*i+1]), []uint32{uint32(n)}, lab)
	}
	out := filepath.Join(t.TempDir(), "fed")
	var stdout, stderr bytes.Buffer
	args := []string{"fashion-mnist", "--source", src, "--alpha", "0.5", "--sites", "3", "--per-site", "40", "--seed", "2", "--out", out}
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	fed, err := dataset.DiscoverFederation(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(fed.Sites) != 3 {
		t.Fatalf("sites %v, want 3", fed.Sites)
	}
	n := 0
	for _, s := range fed.Sites {
		d, err := dataset.LoadImageSite(out, s, 4)
		if err != nil {
			t.Fatal(err)
		}
		n += d.Train.N
	}
	if n != 3*40 {
		t.Errorf("%d training images, want 120 (--sites × --per-site)", n)
	}

	stderr.Reset()
	args = []string{"fashion-mnist", "--source", t.TempDir(), "--out", out}
	if code := run(args, &stdout, &stderr); code != exitInput || !strings.Contains(stderr.String(), "train-images-idx3-ubyte.gz is missing") {
		t.Errorf("missing source: exit %d, stderr %q", code, stderr.String())
	}

	// Debian's copy missing and installing turned off: the error names the
	// package and the command (on a machine that has it, nothing to show).
	if dataset.MissingFashionMNIST(dataset.FashionMNISTDir) == "" {
		return
	}
	stderr.Reset()
	args = []string{"fashion-mnist", "--no-install", "--out", out}
	if code := run(args, &stdout, &stderr); code != exitInput || !strings.Contains(stderr.String(), "apt-get install -y dataset-fashion-mnist") {
		t.Errorf("--no-install without the package: exit %d, stderr %q", code, stderr.String())
	}
}
