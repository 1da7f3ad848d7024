package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/eval"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// legacyHash is how `starter` hashed a CSV federation before
// DiscoverFederation existed; campaign names derive from it.
func legacyHash(t *testing.T, dir string, sites []string) string {
	t.Helper()
	h := sha256.New()
	for _, s := range sites {
		for _, suffix := range []string{"_train.csv", "_test.csv"} {
			b, err := os.ReadFile(filepath.Join(dir, s+suffix))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%s%s %x\n", s, suffix, sha256.Sum256(b))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestDiscoverFederationOrder(t *testing.T) {
	const rows = "x0,y\n1,0\n2,1\n"
	for i, tc := range []struct {
		sites    []string
		manifest string // federation.json, "" for none
		want     []string
	}{
		{[]string{"site10", "site2", "site1"}, "", []string{"site1", "site2", "site10"}},                                // 0: natural order
		{[]string{"b", "a", "c"}, `{"sites":[{"name":"c"},{"name":"a"},{"name":"b"}]}`, []string{"c", "a", "b"}},        // 1: the manifest's order
		{[]string{"b", "a"}, `{"sites":[{"name":"b"},{"name":"zz"}]}`, []string{"a", "b"}},                              // 2: manifest names another site
		{[]string{"b", "a"}, `{"sites":[{"name":"b"},{"name":"b"}]}`, []string{"a", "b"}},                               // 3: manifest lists one twice
		{[]string{"b", "a"}, `not json`, []string{"a", "b"}},                                                            // 4: unreadable manifest
		{[]string{"client2", "client10", "hospital"}, "", []string{"client2", "client10", "hospital"}},                  // 5
		{[]string{"s3", "s2"}, `{"sites":[{"name":"s3"},{"name":"s2"}],"shift":[{"name":"s3"}]}`, []string{"s3", "s2"}}, // 6
	} {
		dir := t.TempDir()
		for _, s := range tc.sites {
			writeFile(t, filepath.Join(dir, s+"_train.csv"), rows)
			writeFile(t, filepath.Join(dir, s+"_test.csv"), rows)
		}
		if tc.manifest != "" {
			writeFile(t, filepath.Join(dir, ManifestFile), tc.manifest)
		}
		f, err := DiscoverFederation(dir)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if !slices.Equal(f.Sites, tc.want) {
			t.Errorf("%d: sites %v, want %v", i, f.Sites, tc.want)
		}
		if want := legacyHash(t, dir, f.Sites); f.Hash != want {
			t.Errorf("%d: hash %s, want the legacy %s", i, f.Hash, want)
		}
	}
}

// TestDiscoverFederationParquetAndShifts: parquet sites count, CSV wins
// over parquet for the same split, and shift directories are part of the
// files and the hash.
func TestDiscoverFederationParquetAndShifts(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a_train.csv"), "x0,y\n1,0\n2,1\n")
	writeFile(t, filepath.Join(dir, "a_test.csv"), "x0,y\n1,0\n2,1\n")
	writeParquet(t, filepath.Join(dir, "b_train.parquet"), []string{"y", "x0"}, [][]float64{{0, 1}, {1, 2}})
	writeParquet(t, filepath.Join(dir, "b_test.parquet"), []string{"y", "x0"}, [][]float64{{0, 1}, {1, 2}})
	writeFile(t, filepath.Join(dir, "a_test.parquet"), "ignored: the CSV split wins")
	f, err := DiscoverFederation(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a_train.csv", "a_test.csv", "b_train.parquet", "b_test.parquet"}
	if !slices.Equal(f.Sites, []string{"a", "b"}) || !slices.Equal(f.Files, want) || len(f.ShiftRounds) != 0 {
		t.Fatalf("sites %v files %v shifts %v; want [a b] %v []", f.Sites, f.Files, f.ShiftRounds, want)
	}
	before := f.Hash

	writeFile(t, filepath.Join(ShiftDir(dir, 6), "b_train.csv"), "x0,y\n5,0\n6,1\n")
	writeFile(t, filepath.Join(ShiftDir(dir, 6), "b_test.csv"), "x0,y\n5,0\n6,1\n")
	if err := os.Mkdir(ShiftDir(dir, 3), 0o755); err != nil { // empty: no shift
		t.Fatal(err)
	}
	if f, err = DiscoverFederation(dir); err != nil {
		t.Fatal(err)
	}
	want = append(want, "from-round-0006/b_train.csv", "from-round-0006/b_test.csv")
	if !slices.Equal(f.Files, want) || !slices.Equal(f.ShiftRounds, []int{6}) || f.Hash == before {
		t.Errorf("files %v shifts %v hash changed %v; want %v [6] true", f.Files, f.ShiftRounds, f.Hash != before, want)
	}
}

func TestDiscoverFederationErrors(t *testing.T) {
	for i, tc := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"notes.txt": "x"}, "no <site>_train.csv or <site>_train.parquet files"},                            // 0
		{map[string]string{"a_train.csv": "x0,y\n1,0\n"}, "site a: "},                                                         // 1: no test split
		{map[string]string{"-a_train.csv": "x0,y\n1,0\n", "-a_test.csv": "x0,y\n1,0\n"}, `file -a_train.csv: site name "-a"`}, // 2
		{map[string]string{"a_train.csv": "x", "a_test.csv": "x", "from-round-0002/a_train.csv": "x"}, "from-round-0002"},     // 3: shifted train without test
	} {
		dir := t.TempDir()
		for name, body := range tc.files {
			writeFile(t, filepath.Join(dir, name), body)
		}
		_, err := DiscoverFederation(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "federation "+dir) {
			t.Errorf("%d: error %v, want one naming %s and containing %q", i, err, dir, tc.want)
		}
	}
	if _, err := DiscoverFederation(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "no <site>_train.csv") {
		t.Errorf("missing directory: error %v, want one saying no site files", err)
	}
}

// TestWriteFederationContinual: a continual federation is written in the
// layout the sites read, and read back round by round.
func TestWriteFederationContinual(t *testing.T) {
	opt := eval.DefaultHealthcareOptions(9)
	opt.Shift = &eval.ContinualShift{Sites: []int{2, 6}, AfterRound: 5, Magnitude: 3}
	fed, err := eval.Healthcare(opt)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteFederation(dir, fed); err != nil {
		t.Fatal(err)
	}
	f, err := DiscoverFederation(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Sites, fed.SiteNames()) || !slices.Equal(f.ShiftRounds, []int{6}) {
		t.Fatalf("sites %v shifts %v; want %v [6]", f.Sites, f.ShiftRounds, fed.SiteNames())
	}
	m := NewManifest(fed)
	if len(m.Shift) != 2 || m.Shift[0].TrainFile != "from-round-0006/"+fed.Sites[2].Name+"_train.csv" {
		t.Fatalf("manifest shift %+v", m.Shift)
	}
	for i, tc := range []struct {
		site  int
		round int
		x0    float64
	}{
		{2, 5, fed.Sites[2].XTrain[0][0]},   // 0: before the shift
		{2, 6, fed.Shifted[0].XTrain[0][0]}, // 1: from the shift on
		{2, 9, fed.Shifted[0].XTrain[0][0]}, // 2
		{0, 9, fed.Sites[0].XTrain[0][0]},   // 3: a site the shift does not hit
	} {
		d, err := LoadSiteRound(dir, fed.Sites[tc.site].Name, tc.round, SiteOptions{})
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if d.Train.X[0][0] != tc.x0 || d.Train.Y[0] != float64(fed.Sites[tc.site].YTrain[0]) {
			t.Errorf("%d: site %d round %d: row 0 = %v (y %v), want x0 %v", i, tc.site, tc.round, d.Train.X[0][0], d.Train.Y[0], tc.x0)
		}
	}
}

// TestFederationColumns: the federation's feature columns are those most
// sites' training files have, ties going to the earliest site; sites with
// other columns, or none named, are listed. Parquet files count by their
// schema. Each expectation is read off the files written.
func TestFederationColumns(t *testing.T) {
	for i, test := range []struct {
		headers    []string // site i's training file header ("" for parquet with columns a,b,y)
		want       []string
		wantDiffer []string
	}{
		{[]string{"a,b,y", "a,b,y", "a,b,c,y"}, []string{"a", "b"}, []string{"s3"}}, // 0: the majority
		{[]string{"a,c,y", "a,b,y", "a,b,y"}, []string{"a", "b"}, []string{"s1"}},   // 1: not the first site's
		{[]string{"b,a,y", "a,b,y"}, []string{"b", "a"}, []string{"s2"}},            // 2: a tie goes to the earliest
		{[]string{"y,a,b", "", "1,2,0"}, []string{"a", "b"}, []string{"s3"}},        // 3: label anywhere; parquet; no header
		{[]string{"1,2,0", "3,4,1"}, nil, nil},                                      // 4: no names at all
		{[]string{"a,b,target", "a,b,target"}, nil, nil},                            // 5: no label column y: the workers' --label decides
		{[]string{"a,b,target", "a,b,y"}, []string{"a", "b"}, []string{"s1"}},       // 6
	} {
		dir := t.TempDir()
		for j, h := range test.headers {
			site := fmt.Sprintf("s%d", j+1)
			if h == "" {
				writeParquet(t, filepath.Join(dir, site+"_train.parquet"), []string{"a", "b", "y"}, [][]float64{{1, 2, 0}})
				writeParquet(t, filepath.Join(dir, site+"_test.parquet"), []string{"a", "b", "y"}, [][]float64{{1, 2, 0}})
				continue
			}
			for _, split := range []string{"train", "test"} {
				if err := os.WriteFile(filepath.Join(dir, site+"_"+split+".csv"), []byte(h+"\n1,2,0\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		f, err := DiscoverFederation(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Columns("y")
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if !reflect.DeepEqual(got.Features, test.want) || !reflect.DeepEqual(got.Differ, test.wantDiffer) {
			t.Errorf("case %d: got %v (differ %v), want %v (differ %v)", i, got.Features, got.Differ, test.want, test.wantDiffer)
		}
	}
}
