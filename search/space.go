package search

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ptopofl/ptopofl/method"
)

// Dimension is one dimension of a search space as a sweep file writes it,
// under `search:`. Exactly one of Uniform, LogUniform, Int and Choice is
// given:
//
//	search:
//	  - {name: beta, uniform: [0, 1]}          # a Float hyper-parameter
//	  - {name: lr, log_uniform: [0.001, 0.1]}  # a Float one, lo > 0
//	  - {name: clusters, int: [1, 6]}          # an Int one, integers in [lo, hi]
//	  - {name: n_sub, int: [20, 320], log: true}
//	  - {name: descriptor, choice: [exact, triangle]}  # any kind
//
// Name is a hyper-parameter's JSON name in method.Params. Uniform and
// LogUniform apply to Float hyper-parameters, Int to Int ones (Log makes
// it log-uniform, lo ≥ 1), Choice to any kind with values of that kind:
// numbers for Int (integers) and Float, names for Text. Ranges are closed
// and lo must be below hi; both ends, and every choice, must pass the
// hyper-parameter's own check (beta in [0, 1], lr > 0, ...).
type Dimension struct {
	Name       string    `json:"name" yaml:"name"`
	Uniform    []float64 `json:"uniform,omitempty" yaml:"uniform,omitempty"`
	LogUniform []float64 `json:"log_uniform,omitempty" yaml:"log_uniform,omitempty"`
	Int        []float64 `json:"int,omitempty" yaml:"int,omitempty"`
	Log        bool      `json:"log,omitempty" yaml:"log,omitempty"`
	// Choice holds numbers or names as a YAML or JSON decoder gives them
	// (int, int64, uint64, float64 or string).
	Choice []any `json:"choice,omitempty" yaml:"choice,omitempty"`
}

// DimKind says how a dimension draws its values.
type DimKind int

// The kinds of dimensions.
const (
	Uniform    DimKind = iota // a float in [Lo, Hi]
	LogUniform                // a float in [Lo, Hi], uniform in log space
	IntRange                  // an integer in [Lo, Hi], uniform (or log-uniform with Log)
	Choice                    // one of Choices, unordered
)

// Dim is a validated dimension of a Space.
type Dim struct {
	Name    string
	Kind    DimKind
	Lo, Hi  float64 // Uniform, LogUniform, IntRange
	Log     bool    // IntRange only
	Choices []method.Value
	// Param is the kind of the hyper-parameter: a Choice over an Int or
	// Float one gives numbers, over a Text one names.
	Param method.Kind
}

// Space is a validated search space: its dimensions in the order the sweep
// file gives them, which is the order of every Config.
type Space struct {
	Dims []Dim
}

// Config is one point of a Space: a value per dimension, in the space's
// order, as overrides of a campaign's hyper-parameters
// (method.Hyperparameters.Apply).
type Config []method.ParamValue

// String formats c as "beta=0.3 descriptor=exact".
func (c Config) String() string {
	parts := make([]string, len(c))
	for i, pv := range c {
		parts[i] = pv.Name + "=" + paramValue(pv).String()
	}
	return strings.Join(parts, " ")
}

func paramValue(pv method.ParamValue) method.Value {
	return method.Value{Num: pv.Value, Text: pv.Text}
}

// NewSpace validates dims and returns the Space they describe. An error
// names the dimension and what is wrong with it, for instance
// "search.beta: uniform [0.5, 0.2]: lo must be below hi".
func NewSpace(dims []Dimension) (Space, error) {
	if len(dims) == 0 {
		return Space{}, fmt.Errorf("search: no dimensions; give at least one, e.g. {name: beta, uniform: [0, 1]}")
	}
	var s Space
	for i, d := range dims {
		where := fmt.Sprintf("search[%d]", i)
		if d.Name != "" {
			where = "search." + d.Name
		}
		dim, err := compileDim(d)
		if err != nil {
			return Space{}, fmt.Errorf("%s: %w", where, err)
		}
		for _, prev := range s.Dims {
			if prev.Name == d.Name {
				return Space{}, fmt.Errorf("%s: given twice", where)
			}
		}
		s.Dims = append(s.Dims, dim)
	}
	return s, nil
}

func compileDim(d Dimension) (Dim, error) {
	if d.Name == "" {
		return Dim{}, fmt.Errorf("no name; want a hyper-parameter, one of %v", method.ParamNames())
	}
	p, ok := method.Lookup(d.Name)
	if !ok {
		return Dim{}, fmt.Errorf("unknown hyper-parameter; want one of %v", method.ParamNames())
	}
	given := 0
	for _, set := range []bool{d.Uniform != nil, d.LogUniform != nil, d.Int != nil, d.Choice != nil} {
		if set {
			given++
		}
	}
	if given != 1 {
		return Dim{}, fmt.Errorf("give exactly one of uniform, log_uniform, int and choice (got %d)", given)
	}
	if d.Log && d.Int == nil {
		return Dim{}, fmt.Errorf("log applies to int only; use log_uniform for a float")
	}
	dim := Dim{Name: d.Name, Param: p.Kind, Log: d.Log}
	var bounds []float64
	switch {
	case d.Uniform != nil:
		dim.Kind, bounds = Uniform, d.Uniform
	case d.LogUniform != nil:
		dim.Kind, bounds = LogUniform, d.LogUniform
	case d.Int != nil:
		dim.Kind, bounds = IntRange, d.Int
	default:
		dim.Kind = Choice
		return dim, compileChoices(&dim, p, d.Choice)
	}
	label := dim.Kind.String()
	if dim.Kind == IntRange && d.Log {
		label = "int (log)"
	}
	if len(bounds) != 2 {
		return Dim{}, fmt.Errorf("%s %v: want [lo, hi]", label, bounds)
	}
	lo, hi := bounds[0], bounds[1]
	rng := fmt.Sprintf("%s [%s, %s]", label, fmtNum(lo), fmtNum(hi))
	switch {
	case dim.Kind == IntRange && p.Kind != method.Int:
		return Dim{}, fmt.Errorf("int on %s hyper-parameter; use uniform or log_uniform for a float, choice for a name", article(p.Kind))
	case dim.Kind != IntRange && p.Kind != method.Float:
		return Dim{}, fmt.Errorf("%s on %s hyper-parameter; use int for an integer, choice for a name", label, article(p.Kind))
	case isBad(lo) || isBad(hi):
		return Dim{}, fmt.Errorf("%s: bounds must be finite numbers", rng)
	case !(lo < hi):
		return Dim{}, fmt.Errorf("%s: lo must be below hi", rng)
	case dim.Kind == IntRange && (lo != math.Trunc(lo) || hi != math.Trunc(hi)):
		return Dim{}, fmt.Errorf("%s: bounds must be integers", rng)
	case dim.Kind == IntRange && (math.Abs(lo) > 1<<31 || math.Abs(hi) > 1<<31):
		return Dim{}, fmt.Errorf("%s: bounds must lie within ±2^31", rng)
	case dim.Kind == LogUniform && !(lo > 0):
		return Dim{}, fmt.Errorf("%s: lo must be > 0 on a log scale", rng)
	case dim.Kind == IntRange && d.Log && !(lo >= 1):
		return Dim{}, fmt.Errorf("%s: lo must be ≥ 1 on a log scale", rng)
	}
	for _, end := range []struct {
		name string
		x    float64
	}{{"lo", lo}, {"hi", hi}} {
		if msg := check(p, method.Value{Num: end.x}); msg != "" {
			return Dim{}, fmt.Errorf("%s: %s %s %s", rng, end.name, fmtNum(end.x), msg)
		}
	}
	dim.Lo, dim.Hi = lo, hi
	return dim, nil
}

func compileChoices(dim *Dim, p method.Param, raw []any) error {
	if len(raw) == 0 {
		return fmt.Errorf("choice []: give at least one value")
	}
	for i, r := range raw {
		v, err := choiceValue(p, r)
		if err != nil {
			return fmt.Errorf("choice[%d] %v: %w", i, r, err)
		}
		if msg := check(p, v); msg != "" {
			return fmt.Errorf("choice[%d] %s: %s", i, v, msg)
		}
		for _, prev := range dim.Choices {
			if prev == v {
				return fmt.Errorf("choice[%d] %s: given twice", i, v)
			}
		}
		dim.Choices = append(dim.Choices, v)
	}
	return nil
}

// choiceValue converts one decoded choice to a Value of p's kind.
func choiceValue(p method.Param, r any) (method.Value, error) {
	var x float64
	switch v := r.(type) {
	case string:
		if p.Kind != method.Text {
			return method.Value{}, fmt.Errorf("a name on %s hyper-parameter; want a number", article(p.Kind))
		}
		if v == "" {
			return method.Value{}, fmt.Errorf("empty name")
		}
		return method.Value{Text: v}, nil
	case int:
		x = float64(v)
	case int64:
		x = float64(v)
	case uint64:
		x = float64(v)
	case float64:
		x = v
	case bool:
		return method.Value{}, fmt.Errorf("want a number or a name, got %t", v)
	case []any:
		return method.Value{}, fmt.Errorf("want a number or a name, got a list")
	case map[string]any:
		return method.Value{}, fmt.Errorf("want a number or a name, got a mapping")
	default:
		return method.Value{}, fmt.Errorf("want a number or a name")
	}
	switch {
	case p.Kind == method.Text:
		return method.Value{}, fmt.Errorf("a number on a text hyper-parameter; want a name")
	case isBad(x):
		return method.Value{}, fmt.Errorf("want a finite number")
	case p.Kind == method.Int && (x != math.Trunc(x) || math.Abs(x) > 1<<31):
		return method.Value{}, fmt.Errorf("want an integer for an int hyper-parameter")
	}
	return method.Value{Num: x}, nil
}

func check(p method.Param, v method.Value) string {
	if p.Check == nil {
		return ""
	}
	return p.Check(v)
}

func isBad(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func article(k method.Kind) string {
	if k == method.Int {
		return "an int"
	}
	return "a " + k.String()
}

// String names the kind as a sweep file writes it.
func (k DimKind) String() string {
	switch k {
	case Uniform:
		return "uniform"
	case LogUniform:
		return "log_uniform"
	case IntRange:
		return "int"
	case Choice:
		return "choice"
	}
	return "DimKind(" + strconv.Itoa(int(k)) + ")"
}

// value returns the ParamValue of dimension d for a number x (a choice's
// index for Choice).
func (d Dim) value(x float64) method.ParamValue {
	if d.Kind == Choice {
		c := d.Choices[int(x)]
		return method.ParamValue{Name: d.Name, Value: c.Num, Text: c.Text}
	}
	return method.ParamValue{Name: d.Name, Value: x}
}

// internal returns d's value in c as a number (a choice's index for
// Choice) and whether c has a valid value for d.
func (d Dim) internal(c Config) (float64, bool) {
	for _, pv := range c {
		if pv.Name != d.Name {
			continue
		}
		if d.Kind == Choice {
			for i, ch := range d.Choices {
				if ch == paramValue(pv) {
					return float64(i), true
				}
			}
			return 0, false
		}
		x := pv.Value
		if pv.Text != "" || !(x >= d.Lo && x <= d.Hi) || (d.Kind == IntRange && x != math.Trunc(x)) {
			return 0, false
		}
		return x, true
	}
	return 0, false
}

// Contains reports whether c gives every dimension of s a value inside it
// (a listed choice, a number in range), and nothing else.
func (s Space) Contains(c Config) bool {
	if len(c) != len(s.Dims) {
		return false
	}
	for _, d := range s.Dims {
		if _, ok := d.internal(c); !ok {
			return false
		}
	}
	return true
}

// GridSize returns the number of points of a space of Choice dimensions:
// the product of their numbers of choices. It is an error for a space with
// a continuous or integer-range dimension.
func (s Space) GridSize() (int, error) {
	n := 1
	for _, d := range s.Dims {
		if d.Kind != Choice {
			return 0, fmt.Errorf("search.%s: %s is not a grid; a grid takes choice dimensions only", d.Name, d.Kind)
		}
		if n > math.MaxInt32/len(d.Choices) {
			return 0, fmt.Errorf("search: the grid has more than 2^31 points")
		}
		n *= len(d.Choices)
	}
	return n, nil
}

// key identifies a config for lookups; it never orders anything.
func (c Config) key() string { return c.String() }

// maxEnumerable bounds the size of a space that Size calls finite: a
// space of discrete dimensions larger than this is searched as if it
// were infinite (a random draw almost never repeats a tried point), and
// its points are never enumerated.
const maxEnumerable = 1 << 40

// count returns the number of values of a discrete dimension (Choice or
// IntRange) and false for a continuous one.
func (d Dim) count() (int, bool) {
	switch d.Kind {
	case Choice:
		return len(d.Choices), true
	case IntRange:
		return int(d.Hi-d.Lo) + 1, true
	}
	return 0, false
}

// Size returns the number of configurations of s and true when every
// dimension is discrete (a choice or an integer range) and there are at
// most 2^40 of them; false otherwise (the space is searched as an
// infinite one).
func (s Space) Size() (int, bool) {
	n := 1
	for _, d := range s.Dims {
		k, ok := d.count()
		if !ok || n > maxEnumerable/k {
			return 0, false
		}
		n *= k
	}
	return n, true
}

// pointIndex returns the position of c among the points of a finite
// space (Size), in the order of SuggestGrid: the last dimension varies
// fastest; false when c is not a point of s.
func (s Space) pointIndex(c Config) (int, bool) {
	i := 0
	for _, d := range s.Dims {
		k, ok := d.count()
		x, in := d.internal(c)
		if !ok || !in {
			return 0, false
		}
		if d.Kind == IntRange {
			x -= d.Lo
		}
		i = i*k + int(x)
	}
	return i, true
}

// point returns the i-th point of a finite space (pointIndex's order).
func (s Space) point(i int) Config {
	c := make(Config, len(s.Dims))
	for j := len(s.Dims) - 1; j >= 0; j-- {
		d := s.Dims[j]
		k, _ := d.count()
		x := float64(i % k)
		if d.Kind == IntRange {
			x += d.Lo
		}
		c[j] = d.value(x)
		i /= k
	}
	return c
}
