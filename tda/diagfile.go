package tda

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// DiagramSyntaxError reports a malformed line of a diagram file. Line and
// Column are 1-based; Column is the byte offset of the offending field.
type DiagramSyntaxError struct {
	Line, Column int
	Msg          string
}

// Error returns "line L, column C: message".
func (e *DiagramSyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// ReadDiagram parses a persistence diagram in the canonical text form of
// ../shared/golden/ph/README.md: one bar per line as "dim birth death",
// separated by spaces or tabs, with blank lines and lines starting with '#'
// ignored. dim must be 0 or 1. Numbers are anything strconv.ParseFloat
// accepts, including exponent form ("1e-05") and "inf"; Birth must be finite
// and Death must be ≥ Birth (+Inf for an infinite bar).
//
// Bars are kept as written, including zero-length ones, and each dimension is
// sorted as WriteDiagram orders it. A malformed line gives a
// *DiagramSyntaxError naming the line and column; a read failure is
// returned wrapped.
func ReadDiagram(r io.Reader) (Diagram, error) {
	var d Diagram
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		fields, cols := splitFields(text)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		fail := func(col int, format string, args ...any) (Diagram, error) {
			return Diagram{}, &DiagramSyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
		}
		if len(fields) != 3 {
			return fail(cols[0], "want 3 fields \"dim birth death\", got %d", len(fields))
		}
		var dim int
		switch fields[0] {
		case "0":
			dim = 0
		case "1":
			dim = 1
		default:
			return fail(cols[0], "dimension %q is not 0 or 1", fields[0])
		}
		birth, err := strconv.ParseFloat(fields[1], 64)
		if err != nil || math.IsNaN(birth) || math.IsInf(birth, 0) {
			return fail(cols[1], "birth %q is not a finite number in range", fields[1])
		}
		death, err := strconv.ParseFloat(fields[2], 64)
		if err != nil || math.IsNaN(death) {
			return fail(cols[2], "death %q is not a number or is out of range", fields[2])
		}
		if death < birth {
			return fail(cols[2], "death %s is less than birth %s", fields[2], fields[1])
		}
		if dim == 0 {
			d.H0 = append(d.H0, Pair{birth, death})
		} else {
			d.H1 = append(d.H1, Pair{birth, death})
		}
	}
	if err := sc.Err(); err != nil {
		return Diagram{}, fmt.Errorf("read diagram after line %d: %w", line, err)
	}
	sortCanonical(d.H0)
	sortCanonical(d.H1)
	return d, nil
}

// WriteDiagram writes d in the canonical form ReadDiagram reads and the
// golden files of ../shared/golden/ph hold: the H0 bars then the H1 bars, one
// "dim birth death" line each, sorted by (birth, death) with +Inf last, every
// number formatted by FormatFloat. It writes no comments. A pair with a NaN
// is an error, since the file could not be read back.
func WriteDiagram(w io.Writer, d Diagram) error {
	bw := bufio.NewWriter(w)
	for dim, pairs := range [][]Pair{d.H0, d.H1} {
		sorted := append([]Pair(nil), pairs...)
		sortCanonical(sorted)
		for _, q := range sorted {
			if math.IsNaN(q.Birth) || math.IsNaN(q.Death) {
				return fmt.Errorf("write diagram: H%d pair (%v, %v) has a NaN", dim, q.Birth, q.Death)
			}
			bw.WriteString(strconv.Itoa(dim))
			bw.WriteByte(' ')
			bw.WriteString(FormatFloat(q.Birth))
			bw.WriteByte(' ')
			bw.WriteString(FormatFloat(q.Death))
			bw.WriteByte('\n')
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write diagram: %w", err)
	}
	return nil
}

// FormatFloat formats x as Python's repr(float) does, so that files written
// here are byte-identical to those written by Python tools: the shortest
// digits that round-trip, in decimal notation with at least one digit after
// the point ("0.0", "5.0", "1.4142135623730951") when 1e-4 ≤ |x| < 1e16 or
// x is zero, otherwise in exponent form with a signed exponent of at least
// two digits ("1e-05", "1.5e+16"); "inf", "-inf" and "nan" otherwise.
func FormatFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	// 'e' with precision -1 gives the shortest round-trip digits as
	// "[-]d.ddde±XX".
	s := strconv.FormatFloat(x, 'e', -1, 64)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	epos := strings.IndexByte(s, 'e')
	digits := strings.Replace(s[:epos], ".", "", 1)
	exp, _ := strconv.Atoi(s[epos+1:])
	if x != 0 && (exp < -4 || exp >= 16) {
		mant := digits[:1]
		if len(digits) > 1 {
			mant += "." + digits[1:]
		}
		esign := "+"
		if exp < 0 {
			esign, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, mant, esign, exp)
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

// sortCanonical sorts pairs by (Birth, Death) with +Inf last, breaking the
// tie between −0 and +0 by sign so that the order, and so the written text,
// is a function of the multiset alone.
func sortCanonical(pairs []Pair) {
	less := func(x, y float64) (bool, bool) {
		if x != y {
			return x < y, true
		}
		sx, sy := math.Signbit(x), math.Signbit(y)
		return sx && !sy, sx != sy
	}
	sort.Slice(pairs, func(i, j int) bool {
		if l, decided := less(pairs[i].Birth, pairs[j].Birth); decided {
			return l
		}
		l, _ := less(pairs[i].Death, pairs[j].Death)
		return l
	})
}

// splitFields splits s at runs of spaces and tabs and returns the fields with
// their 1-based byte columns. For a line without fields cols is {1}.
func splitFields(s string) (fields []string, cols []int) {
	start := -1
	for i := 0; i <= len(s); i++ {
		sep := i == len(s) || s[i] == ' ' || s[i] == '\t' || s[i] == '\r'
		switch {
		case sep && start >= 0:
			fields = append(fields, s[start:i])
			cols = append(cols, start+1)
			start = -1
		case !sep && start < 0:
			start = i
		}
	}
	if len(cols) == 0 {
		cols = []int{1}
	}
	return fields, cols
}
