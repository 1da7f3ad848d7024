package dataset

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRoundDir(t *testing.T) {
	dir := t.TempDir()
	write := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const base = "x0,y\n0.5,0\n1.5,1\n"
	const shifted = "x0,y\n10.5,0\n11.5,1\n"
	for _, s := range []string{"a", "b"} {
		write(filepath.Join(dir, s+"_train.csv"), base)
		write(filepath.Join(dir, s+"_test.csv"), base)
	}
	write(filepath.Join(ShiftDir(dir, 4), "a_train.csv"), shifted)
	write(filepath.Join(ShiftDir(dir, 4), "a_test.csv"), shifted)
	for i, tc := range []struct {
		site  string
		round int
		want  string
	}{
		{"a", 1, dir},               // 0
		{"a", 3, dir},               // 1
		{"a", 4, ShiftDir(dir, 4)},  // 2
		{"a", 20, ShiftDir(dir, 4)}, // 3
		{"b", 20, dir},              // 4: b never shifts
	} {
		if got := RoundDir(dir, tc.site, tc.round); got != tc.want {
			t.Errorf("case %d: RoundDir(%s, %d) = %s, want %s", i, tc.site, tc.round, got, tc.want)
		}
	}
	d, err := LoadSiteRound(dir, "a", 5, SiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Train.X[0][0] != 10.5 {
		t.Errorf("round 5 reads %v, want the shifted rows", d.Train.X[0])
	}
}
