// Package reference writes the generated parts of the documentation's
// reference (docs/reference/): every hyper-parameter from its one
// declaration in method.Params, so that the reference cannot drift from the
// code that validates and applies it. cmd/starter's TestReferenceIsCurrent
// regenerates these files and fails when the committed ones differ.
package reference

import (
	"fmt"
	"math"
	"strings"

	"github.com/ptopofl/ptopofl/method"
)

// probes are the values a parameter's check is asked about, in order; the
// first one it refuses gives the rule the reference prints ("must be in
// [0, 1]"). Text parameters are asked about a value no parameter accepts.
var (
	numProbes  = []float64{-1, 0, 0.5, 1, 2, 3, 20, 1e6, math.Inf(1)}
	textProbes = []string{"", "no-such-value"}
)

// Parameters returns docs/reference/parameters.md: one section per
// hyper-parameter of method.Params, in declaration order, with its meaning,
// type, the methods and models that read it, its default under every preset,
// what a stored spec without it means, and the rule its validation enforces.
func Parameters() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from method/params.go by `make reference`; do not edit. -->\n\n")
	b.WriteString("# Hyper-parameters\n\n")
	b.WriteString("Every hyper-parameter a campaign file (`hyperparameters:`), `starter run --set NAME=VALUE`,\n")
	b.WriteString("a sweep grid or a results table names. Each is declared once, in `method/params.go`; this page\n")
	b.WriteString("is generated from that declaration, and `make test` fails when it is stale.\n\n")
	b.WriteString("A preset (`--preset`) is a set of defaults: `default` (this project's choices), `paper` (the\n")
	b.WriteString("authors' code, to reproduce Table 1), and the deep presets for image models (" + quoteList(method.DeepPresets) + ").\n")
	b.WriteString("A value given explicitly wins over the preset's; validation checks a value only for the methods\n")
	b.WriteString("(and models) that read it.\n\n")
	b.WriteString("| name | type | read by | default | paper |\n|---|---|---|---|---|\n")
	for _, p := range method.Params {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s |\n", p.Name, anchor(p.Name), p.Kind.String(), readBy(p), show(p, p.DefaultFor(method.Default)), show(p, p.DefaultFor(method.Paper)))
	}
	for _, p := range method.Params {
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n", p.Name, capitalise(p.Doc))
		fmt.Fprintf(&b, "- Type: %s.\n", p.Kind.String())
		fmt.Fprintf(&b, "- Read by: %s.\n", readBy(p))
		b.WriteString("- Defaults:")
		for i, preset := range method.Presets {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s `%s` %s", sep, preset, show(p, p.DefaultFor(preset)))
		}
		b.WriteString(".\n")
		if p.ZeroIsSetting {
			b.WriteString("- Zero is a setting of its own (not \"the preset's default\").\n")
		}
		if p.Absent != nil {
			fmt.Fprintf(&b, "- A stored spec without it (written before it existed) means %s.\n", show(p, *p.Absent))
		}
		fmt.Fprintf(&b, "- Validation: %s.\n", rule(p))
	}
	return b.String()
}

// rule describes what p's check refuses, from the check itself.
func rule(p method.Param) string {
	if p.Check == nil {
		return "any value of its type"
	}
	if p.Kind == method.Text {
		for _, t := range textProbes {
			if msg := p.Check(method.Value{Text: t}); msg != "" {
				return msg
			}
		}
		return "any text"
	}
	for _, x := range numProbes {
		if msg := p.Check(method.Value{Num: x}); msg != "" {
			return msg
		}
	}
	return "any number"
}

func readBy(p method.Param) string {
	who := "every method"
	if p.Methods != nil {
		names := make([]string, len(p.Methods))
		for i, m := range p.Methods {
			names[i] = "`" + string(m) + "`"
		}
		who = strings.Join(names, ", ")
	}
	if p.Deep {
		who += " (deep models only)"
	}
	return who
}

func show(p method.Param, v method.Value) string {
	if p.Kind == method.Text {
		return fmt.Sprintf("`%q`", v.Text)
	}
	return "`" + v.String() + "`"
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = "`" + x + "`"
	}
	return strings.Join(q, ", ")
}

// anchor is the heading's GitHub anchor: lower case, underscores kept.
func anchor(name string) string { return strings.ToLower(name) }

func capitalise(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	if r[0] >= 'a' && r[0] <= 'z' {
		r[0] -= 'a' - 'A'
	}
	return string(r)
}
