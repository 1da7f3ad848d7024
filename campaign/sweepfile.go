package campaign

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ptopofl/ptopofl/search"
)

// SearchSpace is a sweep file's `search:`, in either of the forms people
// write: a list of dimensions, each with its name,
//
//	search:
//	  - {name: lr, log_uniform: [0.003, 0.3]}
//	  - {name: clusters, choice: [1, 2, 3]}
//
// or a mapping keyed by hyper-parameter name, as `grid:` and W&B's sweep
// files write a space, where a bare list is a choice:
//
//	search:
//	  lr: {log_uniform: [0.003, 0.3]}
//	  clusters: [1, 2, 3]
//
// Both give the same dimensions in the order the file writes them.
type SearchSpace []search.Dimension

// sweepForms names, by a field's path in a sweep file, the forms it
// accepts, for the errors of decodeSweepFile; a field not listed is
// described from its kind.
var sweepForms = map[string]string{
	"sweep":                  "a name of letters, digits, '.', '_' and '-', such as tune-ptopofl",
	"preset":                 "a preset name: default, paper or a deep preset",
	"seeds":                  "a list of whole numbers ≥ 0, such as [1, 2, 3]",
	"methods":                "a list of method names, such as [ptopofl, fedavg]",
	"federations":            "a list of federations, such as [{name: hc, path: ../federation}]",
	"hyperparameters":        "a mapping of hyper-parameter name to value, such as {lr: 0.1, beta: 0.3}",
	"grid":                   "a mapping of hyper-parameter name to a list of values, such as {beta: [0, 0.3, 1]}",
	"variants":               "a list of labelled settings, such as [{label: M1, methods: [ptopofl], set: {clusters: 1}}]",
	"round_deadline":         "a duration such as 30m or 1h",
	"search":                 searchForms,
	"strategy":               "one of grid, random, asha, tpe, tpe+asha, hyperband",
	"budget":                 "a mapping {campaign_rounds: N, trials: N}",
	"objective":              "a mapping {metric: val_auc or val_acc, mode: max or min}",
	"objective.metric":       "val_auc or val_acc",
	"objective.mode":         "max or min",
	"asha":                   "a mapping {min_rounds: N, eta: N, grace: N}",
	"tpe":                    "a mapping {startup_trials: N, candidates: N, multivariate: true or false}",
	"pruner":                 "median (or leave it out)",
	"median":                 "a mapping {startup_trials: N, warmup_steps: N, interval_steps: N, min_trials: N}",
	"warm_start":             "the name of a finished grid sweep",
	"privacy":                "a mapping {epsilon: E, delta: D}: every site's (ε, δ) over the whole sweep, under dp record",
	"federations[].path":     "a directory of <site>_train.csv and <site>_test.csv files",
	"federations[].sites":    "a list of site names",
	"federations[].seeds":    "a list of whole numbers ≥ 0",
	"variants[].set":         "a mapping of hyper-parameter name to value",
	"variants[].methods":     "a list of method names",
	"search[]":               "a dimension such as {name: lr, log_uniform: [0.003, 0.3]}",
	"search[].name":          "a hyper-parameter name",
	"search[].uniform":       "a range [lo, hi] of two numbers",
	"search[].log_uniform":   "a range [lo, hi] of two numbers, lo > 0",
	"search[].int":           "a range [lo, hi] of two whole numbers",
	"search[].log":           "true or false",
	"search[].choice":        "a list of numbers or names, such as [1, 2, 3] or [exact, triangle]",
	"hyperparameters.":       "a number or a name",
	"grid.":                  "a list of numbers or names, such as [0, 0.3, 1]",
	"variants[].set.":        "a number or a name",
	"search[].choice[]":      "a number or a name",
	"search[].uniform[]":     "a number",
	"search[].log_uniform[]": "a number",
	"search[].int[]":         "a whole number",
}

const searchForms = "a list of dimensions such as [{name: lr, log_uniform: [0.003, 0.3]}], or a mapping such as {lr: {log_uniform: [0.003, 0.3]}, clusters: [1, 2, 3]}; a dimension takes one of uniform, log_uniform, int (with log: true for log scale) or choice"

// decodeSweepFile decodes the sweep file b (read from path) into sf,
// strictly: an unknown field, a duplicate key or a value of the wrong
// form is an input error naming the file, the line, the field's path
// (`budget.campaign_rounds`, `search.lr.log_uniform`) and the forms it
// accepts, in the sweep file's words, never a Go or YAML type.
func decodeSweepFile(path string, b []byte, sf *SweepFile) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return inputErrorf("sweep file %s: %s (not YAML)", path, msg)
	}
	if len(doc.Content) == 0 {
		return inputErrorf("sweep file %s: empty", path)
	}
	d := sweepDecoder{path: path}
	return d.decode(doc.Content[0], reflect.ValueOf(sf).Elem(), "", "")
}

// sweepDecoder walks a sweep file's YAML tree against the Go value it
// fills.
type sweepDecoder struct{ path string }

// fail is the input error for node at the field path.
func (d sweepDecoder) fail(n *yaml.Node, path, format string, args ...any) error {
	where := path
	if where == "" {
		where = "the file"
	}
	return inputErrorf("sweep file %s: line %d: %s: %s", d.path, n.Line, where, fmt.Sprintf(format, args...))
}

// wrong is the error for a value of the wrong form at path (form its
// shape: shape is path with list indices and map keys generalised).
func (d sweepDecoder) wrong(n *yaml.Node, path, shape string, t reflect.Type) error {
	return d.fail(n, path, "want %s; got %s", formOf(shape, t), describe(n))
}

// formOf returns the forms a field accepts: sweepForms' entry for its
// shape, or one made from its kind.
func formOf(shape string, t reflect.Type) string {
	if f, ok := sweepForms[shape]; ok {
		return f
	}
	switch t.Kind() {
	case reflect.Pointer:
		return formOf(shape, t.Elem())
	case reflect.Int:
		return "a whole number"
	case reflect.Uint64:
		return "a whole number ≥ 0"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a name (text)"
	case reflect.Slice:
		return "a list"
	case reflect.Map:
		return "a mapping of name to value"
	case reflect.Struct:
		return "a mapping with the keys " + strings.Join(yamlKeys(t), ", ")
	}
	return "a value"
}

// describe says what a node holds, in the file's words.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%q", v)
}

// yamlKeys lists a struct's keys in declaration order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if k := yamlKey(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" || !f.IsExported() {
		return ""
	}
	return k
}

var searchSpaceType = reflect.TypeOf(SearchSpace(nil))

// decode fills v from n; path is the field's path in the file, shape the
// same with list indices written [] and the keys of a name-keyed mapping
// dropped (for sweepForms).
func (d sweepDecoder) decode(n *yaml.Node, v reflect.Value, path, shape string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Tag == "!!null" && n.Kind == yaml.ScalarNode {
		return nil // as if the key were absent
	}
	t := v.Type()
	if t == searchSpaceType {
		return d.searchSpace(n, v, path)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.decode(n, v.Elem(), path, shape)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.wrong(n, path, shape, t)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if seen[k.Value] {
				return d.fail(k, join(path, k.Value), "given twice")
			}
			seen[k.Value] = true
			f, ok := fieldByKey(t, k.Value)
			if !ok {
				return d.fail(k, join(path, k.Value), "unknown field; want one of %s", strings.Join(yamlKeys(t), ", "))
			}
			if err := d.decode(val, v.FieldByIndex(f.Index), join(path, k.Value), join(shape, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.wrong(n, path, shape, t)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return d.fail(k, path, "a key must be a name; got %s", describe(k))
			}
			key := reflect.ValueOf(k.Value)
			if v.MapIndex(key).IsValid() {
				return d.fail(k, join(path, k.Value), "given twice")
			}
			e := reflect.New(t.Elem()).Elem()
			if err := d.decode(val, e, join(path, k.Value), shape+"."); err != nil {
				return err
			}
			v.SetMapIndex(key, e)
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.wrong(n, path, shape, t)
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), shape+"[]"); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Interface:
		// A hyper-parameter's value, a choice: a scalar, or for
		// trainer_params a mapping, decoded as YAML gives it.
		if n.Kind != yaml.ScalarNode && !strings.HasSuffix(path, "trainer_params") {
			return d.wrong(n, path, shape, t)
		}
		var x any
		if err := n.Decode(&x); err != nil {
			return d.wrong(n, path, shape, t)
		}
		v.Set(reflect.ValueOf(&x).Elem())
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.wrong(n, path, shape, t)
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(n.Value)
		return nil
	case reflect.Int, reflect.Uint64, reflect.Float64, reflect.Bool:
		// The scalar's own kind first: YAML's decoder would truncate
		// 2.5 into a whole number without a word.
		tag, want := n.ShortTag(), map[reflect.Kind][]string{
			reflect.Int: {"!!int"}, reflect.Uint64: {"!!int"}, reflect.Float64: {"!!int", "!!float"}, reflect.Bool: {"!!bool"},
		}[t.Kind()]
		if !slices.Contains(want, tag) {
			return d.wrong(n, path, shape, t)
		}
		p := reflect.New(t)
		if err := n.Decode(p.Interface()); err != nil {
			return d.wrong(n, path, shape, t)
		}
		v.Set(p.Elem())
		return nil
	}
	return d.wrong(n, path, shape, t)
}

// fieldByKey finds the struct field with yaml key k.
func fieldByKey(t reflect.Type, k string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); yamlKey(f) == k {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// searchSpace decodes `search:` in either form (SearchSpace).
func (d sweepDecoder) searchSpace(n *yaml.Node, v reflect.Value, path string) error {
	var dims SearchSpace
	switch n.Kind {
	case yaml.SequenceNode:
		for i, item := range n.Content {
			var dim search.Dimension
			if err := d.decode(item, reflect.ValueOf(&dim).Elem(), fmt.Sprintf("%s[%d]", path, i), "search[]"); err != nil {
				return err
			}
			dims = append(dims, dim)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Value == "" {
				return d.fail(k, path, "a key must be a hyper-parameter name; got %s", describe(k))
			}
			where := join(path, k.Value)
			for _, prev := range dims {
				if prev.Name == k.Value {
					return d.fail(k, where, "given twice")
				}
			}
			dim := search.Dimension{Name: k.Value}
			switch val.Kind {
			case yaml.SequenceNode:
				// A bare list is a choice, as in grid:.
				var choice []any
				if err := d.decode(val, reflect.ValueOf(&choice).Elem(), where, "search[].choice"); err != nil {
					return err
				}
				dim.Choice = choice
			case yaml.MappingNode:
				for j := 0; j+1 < len(val.Content); j += 2 {
					if key := val.Content[j]; key.Value == "name" {
						return d.fail(key, where+".name", "the mapping's key names the dimension; leave name out")
					}
				}
				if err := d.decode(val, reflect.ValueOf(&dim).Elem(), where, "search[]"); err != nil {
					return err
				}
			default:
				return d.fail(val, where, "want a dimension such as {log_uniform: [0.003, 0.3]}, {int: [1, 6]} or {choice: [1, 2, 3]}, or a list of choices; got %s", describe(val))
			}
			dims = append(dims, dim)
		}
	default:
		return d.wrong(n, path, "search", v.Type())
	}
	v.Set(reflect.ValueOf(dims))
	return nil
}
