package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SweepSpecDiff lists the settings in which sweep b differs from sweep a,
// as "field a → b" with the sweep file's names for the fields
// (`strategy`, `budget.campaign_rounds`, `search.lr.log_uniform`,
// `hyperparameters.beta`, `federations[hc].sites`, …), in the order of
// the sweep file's fields: a sweep name is bound to its file, and a
// re-run under the same name with an edited file is refused naming what
// changed. Both specs are compared with their defaults applied; the code
// version is not compared (a rebuilt binary runs the same sweep).
func SweepSpecDiff(a, b SweepSpec) []string {
	fa, fb := sweepFields(a), sweepFields(b)
	var names []string
	for k := range fa {
		names = append(names, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		oi, oj := fieldOrder(names[i]), fieldOrder(names[j])
		if oi != oj {
			return oi < oj
		}
		return names[i] < names[j]
	})
	var diff []string
	for _, n := range names {
		va, vb := fa[n], fb[n]
		if va != vb {
			diff = append(diff, fmt.Sprintf("%s %s → %s", n, orNone(va), orNone(vb)))
		}
	}
	return diff
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// fileFieldOrder is the order of a sweep file's fields, for the order of
// SweepSpecDiff's lines.
var fileFieldOrder = []string{
	"sweep", "preset", "rounds", "seeds", "methods", "federations", "hyperparameters", "grid/variants",
	"concurrency", "continue_as_new_every", "round_deadline", "site_activity_timeout", "train_heartbeat",
	"campaign_continue_as_new_every", "bucket", "privacy", "search", "strategy", "budget", "objective",
	"asha", "tpe", "pruner", "median", "seed", "warm_start",
}

func fieldOrder(name string) int {
	head := name
	if i := strings.IndexAny(name, ".["); i >= 0 {
		head = name[:i]
	}
	if i := slices.Index(fileFieldOrder, head); i >= 0 {
		return i
	}
	return len(fileFieldOrder)
}

// searchFieldNames maps SweepSearch's JSON fields to the sweep file's.
var searchFieldNames = map[string]string{
	"dims": "search", "strategy": "strategy", "budget": "budget.campaign_rounds", "trials": "budget.trials",
	"objective": "objective.metric", "mode": "objective.mode", "asha": "asha", "tpe": "tpe",
	"pruner": "pruner", "median": "median", "seed": "seed", "warm": "warm_start",
}

// sweepFields flattens s for SweepSpecDiff into field name → value as
// compact JSON (a duration as Go writes it, "30m0s").
func sweepFields(s SweepSpec) map[string]string {
	s = s.WithDefaults()
	s.CodeVersion = ""
	out := map[string]string{}
	put := func(name string, v any) {
		switch x := v.(type) {
		case time.Duration:
			if x != 0 {
				out[name] = x.String()
			}
			return
		case string:
			if x != "" {
				out[name] = x
			}
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			out[name] = fmt.Sprintf("%v", v)
			return
		}
		if t := string(b); t != "null" && t != `""` && t != "0" && t != "{}" && t != "[]" && t != "false" {
			out[name] = t
		}
	}
	put("sweep", s.Sweep)
	put("preset", s.Preset)
	put("rounds", s.Rounds)
	put("seeds", s.Seeds)
	var methods []string
	for _, m := range s.Methods {
		methods = append(methods, string(m.Method))
	}
	put("methods", methods)
	for _, m := range s.Methods {
		where := "hyperparameters"
		if len(s.Methods) > 1 {
			where = "hyperparameters[" + string(m.Method) + "]"
		}
		flatten(out, where, m.Hyperparameters)
	}
	settings := map[string]string{}
	for _, st := range s.Settings {
		b, _ := json.Marshal(st)
		settings[st.Label] = string(b)
	}
	if len(s.Settings) == 1 && s.Settings[0].Label == "base" && len(s.Settings[0].Set) == 0 {
		settings = nil
	}
	for label, v := range settings {
		out["grid/variants["+label+"]"] = v
	}
	for _, f := range s.Federations {
		flatten(out, "federations["+f.Name+"]", f)
	}
	put("concurrency", s.Concurrency)
	put("continue_as_new_every", s.ContinueAsNewEvery)
	put("round_deadline", s.RoundDeadline)
	put("site_activity_timeout", s.SiteActivityTimeout)
	put("train_heartbeat", s.TrainHeartbeat)
	put("campaign_continue_as_new_every", s.CampaignContinueAsNewEvery)
	put("bucket", s.Bucket)
	for _, p := range s.Privacy {
		put(fmt.Sprintf("privacy[%s/%s/%s]", p.Federation, p.Method, p.Setting), p.Set)
	}
	if q := s.Search; q != nil {
		var m map[string]any
		b, _ := json.Marshal(q)
		_ = json.Unmarshal(b, &m)
		for k, v := range m {
			name := searchFieldNames[k]
			if name == "" {
				name = "search." + k
			}
			switch k {
			case "dims":
				for _, d := range q.Dims {
					db, _ := json.Marshal(d)
					var dm map[string]any
					_ = json.Unmarshal(db, &dm)
					delete(dm, "name")
					for dk, dv := range dm {
						put("search."+d.Name+"."+dk, dv)
					}
				}
			case "warm":
				put("warm_start", q.Warm.Sweep)
				wb, _ := json.Marshal(q.Warm.Trials)
				out["warm_start.table"] = fmt.Sprintf("%d configurations (table %s)", len(q.Warm.Trials), shortHash(wb))
			case "objective", "mode":
				if k == "mode" && v == ModeMax {
					continue // max is the default
				}
				put(name, v)
			default:
				flatten(out, name, v)
			}
		}
	}
	return out
}

// flatten puts v's leaves under name: an object's fields as name.field,
// anything else as its JSON.
func flatten(out map[string]string, name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		out[name] = fmt.Sprintf("%v", v)
		return
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		var text string
		if json.Unmarshal(b, &text) == nil {
			if text != "" {
				out[name] = text // a name, as the file writes it
			}
			return
		}
		if t := string(b); t != "null" && t != "0" && t != "{}" && t != "[]" && t != "false" {
			out[name] = t
		}
		return
	}
	for k, x := range m {
		if k == "name" {
			continue // the key it is listed under
		}
		flatten(out, name+"."+k, x)
	}
}

// shortHash is a short, stable tag of b (FNV-1a, 32 bits), to tell two
// tables of the same size apart.
func shortHash(b []byte) string {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return strconv.FormatUint(uint64(h), 16)
}
