package search

import (
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/method"
)

func TestNewSpace(t *testing.T) {
	s, err := NewSpace([]Dimension{
		{Name: "beta", Uniform: []float64{0, 1}},
		{Name: "lr", LogUniform: []float64{0.001, 0.1}},
		{Name: "clusters", Int: []float64{0, 6}},
		{Name: "n_sub", Int: []float64{20, 320}, Log: true},
		{Name: "descriptor", Choice: []any{"exact", "triangle"}},
		{Name: "c", Choice: []any{0.1, 1, int64(10), uint64(100)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Dim{
		{Name: "beta", Kind: Uniform, Lo: 0, Hi: 1, Param: method.Float},
		{Name: "lr", Kind: LogUniform, Lo: 0.001, Hi: 0.1, Param: method.Float},
		{Name: "clusters", Kind: IntRange, Lo: 0, Hi: 6, Param: method.Int},
		{Name: "n_sub", Kind: IntRange, Lo: 20, Hi: 320, Log: true, Param: method.Int},
		{Name: "descriptor", Kind: Choice, Choices: []method.Value{{Text: "exact"}, {Text: "triangle"}}, Param: method.Text},
		{Name: "c", Kind: Choice, Choices: []method.Value{{Num: 0.1}, {Num: 1}, {Num: 10}, {Num: 100}}, Param: method.Float},
	}
	for i, d := range s.Dims {
		w := want[i]
		if d.Name != w.Name || d.Kind != w.Kind || d.Lo != w.Lo || d.Hi != w.Hi || d.Log != w.Log || d.Param != w.Param || len(d.Choices) != len(w.Choices) {
			t.Errorf("dim %d: got %+v, want %+v", i, d, w)
			continue
		}
		for k := range d.Choices {
			if d.Choices[k] != w.Choices[k] {
				t.Errorf("dim %d choice %d: got %v, want %v", i, k, d.Choices[k], w.Choices[k])
			}
		}
	}
	if _, err := s.GridSize(); err == nil {
		t.Error("GridSize of a continuous space: no error")
	}
}

// Every error names the dimension ("search.NAME" or "search[i]") and what
// is wrong; the wanted texts are the messages as a user should read them.
func TestNewSpaceErrors(t *testing.T) {
	for i, test := range []struct {
		dims []Dimension
		want string
	}{
		{ // 0
			dims: []Dimension{{Name: "beta", Uniform: []float64{0.5, 0.2}}},
			want: "search.beta: uniform [0.5, 0.2]: lo must be below hi",
		},
		{ // 1
			dims: []Dimension{{Name: "beta", Uniform: []float64{0.5, 0.5}}},
			want: "search.beta: uniform [0.5, 0.5]: lo must be below hi",
		},
		{ // 2
			dims: []Dimension{{Name: "beta", Int: []float64{0, 1}}},
			want: "search.beta: int on a float hyper-parameter",
		},
		{ // 3
			dims: []Dimension{{Name: "clusters", Uniform: []float64{1, 4}}},
			want: "search.clusters: uniform on an int hyper-parameter; use int",
		},
		{ // 4
			dims: []Dimension{{Name: "descriptor", Uniform: []float64{1, 4}}},
			want: "search.descriptor: uniform on a text hyper-parameter",
		},
		{ // 5
			dims: []Dimension{{Name: "lr", LogUniform: []float64{0, 0.1}}},
			want: "search.lr: log_uniform [0, 0.1]: lo must be > 0 on a log scale",
		},
		{ // 6
			dims: []Dimension{{Name: "bogus", Uniform: []float64{0, 1}}},
			want: "search.bogus: unknown hyper-parameter; want one of [clusters beta",
		},
		{ // 7: beta's own check, method.Params
			dims: []Dimension{{Name: "beta", Uniform: []float64{0, 2}}},
			want: "search.beta: uniform [0, 2]: hi 2 must be in [0, 1]",
		},
		{ // 8
			dims: []Dimension{{Name: "descriptor", Choice: []any{"exact", 3}}},
			want: "search.descriptor: choice[1] 3: a number on a text hyper-parameter; want a name",
		},
		{ // 9
			dims: []Dimension{{Name: "clusters", Choice: []any{1, 2.5}}},
			want: "search.clusters: choice[1] 2.5: want an integer for an int hyper-parameter",
		},
		{ // 10
			dims: []Dimension{{Name: "descriptor", Choice: []any{"exact", "bogus"}}},
			want: `search.descriptor: choice[1] bogus: must be "exact" or "triangle"`,
		},
		{ // 11
			dims: []Dimension{{Name: "beta", Uniform: []float64{0, 1}, Choice: []any{0.5}}},
			want: "search.beta: give exactly one of uniform, log_uniform, int and choice (got 2)",
		},
		{ // 12
			dims: []Dimension{{Name: "beta"}},
			want: "search.beta: give exactly one of uniform, log_uniform, int and choice (got 0)",
		},
		{ // 13
			dims: []Dimension{{Name: "beta", Uniform: []float64{0, 1}}, {Name: "beta", Choice: []any{0.5}}},
			want: "search.beta: given twice",
		},
		{ // 14
			dims: []Dimension{{Uniform: []float64{0, 1}}},
			want: "search[0]: no name",
		},
		{ // 15
			dims: nil,
			want: "search: no dimensions",
		},
		{ // 16
			dims: []Dimension{{Name: "beta", Uniform: []float64{0, 1}, Log: true}},
			want: "search.beta: log applies to int only",
		},
		{ // 17
			dims: []Dimension{{Name: "clusters", Int: []float64{1.5, 4}}},
			want: "search.clusters: int [1.5, 4]: bounds must be integers",
		},
		{ // 18
			dims: []Dimension{{Name: "beta", Uniform: []float64{0}}},
			want: "search.beta: uniform [0]: want [lo, hi]",
		},
		{ // 19
			dims: []Dimension{{Name: "beta", Choice: []any{}}},
			want: "search.beta: choice []: give at least one value",
		},
		{ // 20
			dims: []Dimension{{Name: "beta", Choice: []any{0.5, 0.5}}},
			want: "search.beta: choice[1] 0.5: given twice",
		},
		{ // 21
			dims: []Dimension{{Name: "n_sub", Int: []float64{0, 8}, Log: true}},
			want: "search.n_sub: int (log) [0, 8]: lo must be ≥ 1 on a log scale",
		},
		{ // 22: n_sub's own check
			dims: []Dimension{{Name: "n_sub", Int: []float64{2, 8}}},
			want: "search.n_sub: int [2, 8]: lo 2 must be >= 3",
		},
		{ // 23
			dims: []Dimension{{Name: "beta", Choice: []any{true}}},
			want: "search.beta: choice[0] true: want a number or a name, got true",
		},
		{ // 24
			dims: []Dimension{{Name: "beta", Choice: []any{"high"}}},
			want: "search.beta: choice[0] high: a name on a float hyper-parameter; want a number",
		},
	} {
		_, err := NewSpace(test.dims)
		if err == nil {
			t.Errorf("case %d: no error, want %q", i, test.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), test.want) {
			t.Errorf("case %d: error %q, want it to start with %q", i, err, test.want)
		}
	}
}

func TestSpaceContains(t *testing.T) {
	s, err := NewSpace([]Dimension{
		{Name: "clusters", Int: []float64{1, 4}},
		{Name: "descriptor", Choice: []any{"exact", "triangle"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, test := range []struct {
		c    Config
		want bool
	}{
		{Config{{Name: "clusters", Value: 2}, {Name: "descriptor", Text: "exact"}}, true},    // 0
		{Config{{Name: "descriptor", Text: "exact"}, {Name: "clusters", Value: 2}}, true},    // 1: any order
		{Config{{Name: "clusters", Value: 2.5}, {Name: "descriptor", Text: "exact"}}, false}, // 2: not an integer
		{Config{{Name: "clusters", Value: 5}, {Name: "descriptor", Text: "exact"}}, false},   // 3: out of range
		{Config{{Name: "clusters", Value: 2}, {Name: "descriptor", Text: "other"}}, false},   // 4: not a choice
		{Config{{Name: "clusters", Value: 2}}, false},                                        // 5: a dimension missing
	} {
		if got := s.Contains(test.c); got != test.want {
			t.Errorf("case %d: Contains(%s) = %v, want %v", i, test.c, got, test.want)
		}
	}
}
