package trainerrun

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
)

// defaultPath is the program's PATH when the worker has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// envName is what a variable's name may look like in --trainer-env.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseEnv checks the site's --trainer-env entries: NAME passes the
// worker's own NAME (when it has one) to its programs, NAME=VALUE sets it.
// Names starting with PTOPOFL_ are refused: they are the worker's own (its
// S3 identity, payload keys and secret directory) or the protocol's.
func ParseEnv(entries []string) ([]string, error) {
	seen := map[string]bool{}
	for _, e := range entries {
		name, _, _ := strings.Cut(e, "=")
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("--trainer-env %q: want NAME or NAME=VALUE, NAME of letters, digits and '_'", e)
		}
		if strings.HasPrefix(strings.ToUpper(name), "PTOPOFL_") {
			return nil, fmt.Errorf("--trainer-env %s: PTOPOFL_ variables are the worker's own (its S3 identity, payload keys and secret directory) or the protocol's, never a program's", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("--trainer-env %s: given twice", name)
		}
		seen[name] = true
	}
	return slices.Clone(entries), nil
}

// Environ is the sealed environment of a program: PATH (the worker's, or
// /usr/local/bin:/usr/bin:/bin), HOME=home, LANG and every LC_* the worker
// has, TMPDIR=tmp, the protocol's variables (vars, "NAME=VALUE"), then the
// site's own entries (ParseEnv: NAME passes the worker's NAME, NAME=VALUE
// sets it), which may replace PATH, HOME, TMPDIR or LANG. Nothing else of
// the worker's environment is passed: not its S3 credentials
// (PTOPOFL_S3_ACCESS_KEY, PTOPOFL_S3_SECRET_KEY), its payload keys
// (PTOPOFL_PAYLOAD_KEYS, PTOPOFL_PAYLOAD_KEY_FILE) nor its secret
// directory (PTOPOFL_SECRET_DIR). The result is sorted by name.
func Environ(site []string, home, tmp string, vars ...string) []string {
	env := map[string]string{"HOME": home, "TMPDIR": tmp}
	env["PATH"] = os.Getenv("PATH")
	if env["PATH"] == "" {
		env["PATH"] = defaultPath
	}
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if name == "LANG" || strings.HasPrefix(name, "LC_") {
			env[name] = value
		}
	}
	for _, kv := range vars {
		name, value, _ := strings.Cut(kv, "=")
		env[name] = value
	}
	for _, e := range site {
		name, value, set := strings.Cut(e, "=")
		if strings.HasPrefix(strings.ToUpper(name), "PTOPOFL_") {
			continue // ParseEnv refuses them; never passed
		}
		if !set {
			v, ok := os.LookupEnv(name)
			if !ok {
				continue
			}
			value = v
		}
		env[name] = value
	}
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out
}
