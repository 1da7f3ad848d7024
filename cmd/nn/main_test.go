package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"github.com/ptopofl/ptopofl/internal/subcommand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestBenchJSON checks the contract scripts rely on: one JSON object with
// model, params, step_ms_min and step_ms_median.
func TestBenchJSON(t *testing.T) {
	code, out, stderr := runCmd("bench", "--model", "mlp", "--classes", "10", "--batch", "8", "--steps", "3", "--format", "json")
	if code != subcommand.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("want one line, got %q", out)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// 784·256+256 + 256·10+10 parameters.
	if r["model"] != "mlp" || r["params"] != float64(203530) {
		t.Errorf("got %v", r)
	}
	mn, okMin := r["step_ms_min"].(float64)
	md, okMed := r["step_ms_median"].(float64)
	if !okMin || !okMed || !(mn > 0) || md < mn {
		t.Errorf("step times min %v, median %v", r["step_ms_min"], r["step_ms_median"])
	}
}

// TestBenchDP times DP-SGD steps of the deep-small CNN: the JSON object
// says so, with the clipping norm and noise multiplier, and the parameter
// count is the CNN's (5·5·16+16 + 5·5·16·32+32 + 7·7·32·10+10 = 28,938).
func TestBenchDP(t *testing.T) {
	code, out, stderr := runCmd("bench", "--model", "cnn", "--classes", "10", "--batch", "4", "--steps", "2", "--warmup", "0",
		"--dp", "--clip", "0.5", "--noise", "1.1")
	if code != subcommand.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r["model"] != "cnn" || r["params"] != float64(28938) || r["dp"] != true || r["clip"] != 0.5 || r["noise"] != 1.1 {
		t.Errorf("got %v", r)
	}
	if md, ok := r["step_ms_median"].(float64); !ok || !(md > 0) {
		t.Errorf("step median %v", r["step_ms_median"])
	}
}

func TestBadFlags(t *testing.T) {
	for i, args := range [][]string{
		{},                          // 0
		{"frobnicate"},              // 1
		{"bench"},                   // 2: no model
		{"bench", "--model", "vgg"}, // 3
		{"bench", "--model", "mlp", "--steps", "0"},          // 4
		{"bench", "--model", "mlp", "--format", "xml"},       // 5
		{"bench", "--model", "mlp", "--batch", "x"},          // 6
		{"bench", "--model", "mlp", "extra"},                 // 7
		{"train", "--model", "mlp", "--format", "idx"},       // 8: no files
		{"eval", "--model", "mlp"},                           // 9: no params
		{"bench", "--model", "cnn", "--dp", "--clip", "0"},   // 10: DP clip not positive
		{"bench", "--model", "cnn", "--dp", "--noise", "-1"}, // 11: negative noise
	} {
		code, out, stderr := runCmd(args...)
		if code != subcommand.ExitInput || out != "" || stderr == "" {
			t.Errorf("case %d: exit %d, stdout %q, stderr %q; want exit 2 with a message", i, code, out, stderr)
		}
	}
}

func idx(dims []uint32, values []byte) []byte {
	b := []byte{0, 0, 0x08, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, values...)
}

// TestTrainEval trains an MLP on a small IDX file whose class is the
// brighter half of the image, and evaluates the written parameters.
func TestTrainEval(t *testing.T) {
	dir := t.TempDir()
	const n, side = 60, 6
	pix := make([]byte, n*side*side)
	lab := make([]byte, n)
	for s := range n {
		lab[s] = byte(s % 2)
		for r := range side {
			for c := range side {
				if (c < side/2) == (s%2 == 0) {
					pix[(s*side+r)*side+c] = 200
				}
			}
		}
	}
	img := filepath.Join(dir, "images-idx3-ubyte")
	lbl := filepath.Join(dir, "labels-idx1-ubyte")
	os.WriteFile(img, idx([]uint32{n, side, side}, pix), 0o644)
	os.WriteFile(lbl, idx([]uint32{n}, lab), 0o644)
	params := filepath.Join(dir, "mlp.params")
	code, out, stderr := runCmd("train", "--model", "mlp", "--hidden", "8", "--format", "idx", "--train", img, "--labels", lbl,
		"--out", params, "--epochs", "10", "--batch", "10", "--lr", "0.05")
	if code != subcommand.ExitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	var tr map[string]any
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatal(err)
	}
	// 36·8+8 + 8·2+2 parameters, 6 steps per epoch.
	if tr["params"] != float64(314) || tr["steps"] != float64(60) {
		t.Errorf("train output %v", tr)
	}
	code, out, stderr = runCmd("eval", "--model", "mlp", "--hidden", "8", "--format", "idx", "--test", img, "--labels", lbl, "--params", params)
	if code != subcommand.ExitOK {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	var ev map[string]any
	json.Unmarshal([]byte(out), &ev)
	if ev["accuracy"] != float64(1) {
		t.Errorf("eval output %v, want accuracy 1 on this separable set", ev)
	}
	// A parameter file for another network is rejected.
	code, _, stderr = runCmd("eval", "--model", "mlp", "--hidden", "9", "--format", "idx", "--test", img, "--labels", lbl, "--params", params)
	if code != subcommand.ExitInput || !strings.Contains(stderr, params) {
		t.Errorf("mismatched parameters: exit %d, %q", code, stderr)
	}
	// A truncated image file: the message names the file and the offset.
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, idx([]uint32{n, side, side}, pix[:10]), 0o644)
	code, _, stderr = runCmd("train", "--model", "mlp", "--format", "idx", "--train", bad, "--labels", lbl, "--out", params)
	if code != subcommand.ExitInput || !strings.Contains(stderr, bad+": byte offset 26") {
		t.Errorf("truncated file: exit %d, %q", code, stderr)
	}
}
