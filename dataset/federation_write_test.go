package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/eval"
)

// federationFiles writes fed to a temporary directory and returns every
// file's bytes by name.
func federationFiles(t *testing.T, fed eval.Federation) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if err := WriteFederation(dir, fed); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func digest(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestWriteFederationDeterministic(t *testing.T) {
	gen := func(seed uint64) eval.Federation {
		fed, err := eval.Healthcare(eval.DefaultHealthcareOptions(seed))
		if err != nil {
			t.Fatal(err)
		}
		return fed
	}
	a := federationFiles(t, gen(42))
	b := federationFiles(t, gen(42))
	c := federationFiles(t, gen(43))
	if len(a) != 17 {
		t.Errorf("%d files, want 8 × 2 CSV + federation.json", len(a))
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed wrote different bytes")
	}
	if bytes.Equal(a["site0_train.csv"], c["site0_train.csv"]) || bytes.Equal(a[ManifestFile], c[ManifestFile]) {
		t.Error("seeds 42 and 43 wrote the same data")
	}

	var m FederationManifest
	if err := json.Unmarshal(a[ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	if m.Generator != "healthcare" || m.Seed != 42 || len(m.Sites) != 8 {
		t.Fatalf("manifest %+v", m)
	}
	for k, s := range m.Sites {
		if want := k == 1 || k == 5; s.IsAdversarial != want || (s.Flipped > 0) != want {
			t.Errorf("manifest site %d: adversarial %v flipped %d", k, s.IsAdversarial, s.Flipped)
		}
		// The CSV holds a header and n_train rows, each d+1 fields, and
		// parses back to the in-memory values.
		rows, err := csv.NewReader(bytes.NewReader(a[s.Name+"_train.csv"])).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != s.NTrain+1 || rows[0][0] != "x0" || rows[0][20] != "y" {
			t.Errorf("%s_train.csv: %d lines, header %v", s.Name, len(rows), rows[0])
		}
	}
}

// TestWriteFederationRegression pins the bytes of the seed-42 healthcare
// and benchmark directories. The hashes were recorded from this code; a
// change means the generators' output changed (a different algorithm, or a
// change in math/rand/v2's PCG or NormFloat64), which must be deliberate.
func TestWriteFederationRegression(t *testing.T) {
	hc, err := eval.Healthcare(eval.DefaultHealthcareOptions(42))
	if err != nil {
		t.Fatal(err)
	}
	bm, err := eval.Benchmark(eval.DefaultBenchmarkOptions(42))
	if err != nil {
		t.Fatal(err)
	}
	for i, test := range []struct {
		fed  eval.Federation
		want string
	}{
		{hc, "7b287151b4cddedbeabd1bc9222e691df7de3d202701c45cc0845c3ba23eea87"}, // 0
		{bm, "678116f0d882adb1e52352006753edb3714d758e92d00ebf3c6e3e120c1d182c"}, // 1
	} {
		if got := digest(federationFiles(t, test.fed)); got != test.want {
			t.Errorf("case %d (%s): digest %s, want %s", i, test.fed.Generator, got, test.want)
		}
	}
}

// TestEncodeSiteCSVGolden parses two of the authors' files (written by
// Python with repr floats; copied from golden/paper/) and re-encodes them:
// the bytes must be identical, which pins the header, the float format
// (including "2.8406269697127395e-06") and the line endings.
func TestEncodeSiteCSVGolden(t *testing.T) {
	for i, name := range []string{
		"scenario_golden_hc_client3_test.csv", // 0
		"scenario_golden_bm_client3_test.csv", // 1
	} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		X := make([][]float64, 0, len(rows)-1)
		y := make([]int, 0, len(rows)-1)
		for _, r := range rows[1:] {
			x := make([]float64, len(r)-1)
			for j := range x {
				if x[j], err = strconv.ParseFloat(r[j], 64); err != nil {
					t.Fatal(err)
				}
			}
			label, err := strconv.Atoi(r[len(r)-1])
			if err != nil {
				t.Fatal(err)
			}
			X, y = append(X, x), append(y, label)
		}
		var buf bytes.Buffer
		if err := EncodeSiteCSV(&buf, X, y); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), raw) {
			t.Errorf("case %d (%s): re-encoded bytes differ from the golden file", i, name)
		}
	}
}

func TestEncodeSiteCSVErrors(t *testing.T) {
	for i, test := range []struct {
		X    [][]float64
		y    []int
		want string
	}{
		{[][]float64{{1, 2}}, []int{0, 1}, "1 rows but 2 labels"},               // 0
		{[][]float64{{1, 2}, {3}}, []int{0, 1}, "row 1 has 1 features, want 2"}, // 1
	} {
		err := EncodeSiteCSV(&bytes.Buffer{}, test.X, test.y)
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, test.want)
		}
	}
}

func TestEncodePointsCSV(t *testing.T) {
	for i, tc := range []struct {
		pts  [][]float64
		want string // or the error's text
	}{
		{[][]float64{{1, -0.5}, {2.8406269697127395e-06, 3}}, "1.0,-0.5\n2.8406269697127395e-06,3.0\n"}, // 0: repr floats
		{nil, ""}, // 1: no point, no line
		{[][]float64{{1, 2}, {3}}, "point 1 has 1 coordinates, want 2"}, // 2
	} {
		var buf bytes.Buffer
		err := EncodePointsCSV(&buf, tc.pts)
		got := buf.String()
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) || err == nil && got != tc.want {
			t.Errorf("%d: got %q, want %q", i, got, tc.want)
		}
	}
}
