package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
)

// smallFederation writes a 3-site healthcare federation and returns its
// absolute directory.
func smallFederation(t *testing.T) string {
	t.Helper()
	opt := eval.DefaultHealthcareOptions(5)
	opt.Sites, opt.Adversarial = 3, []int{1}
	fed, err := eval.Healthcare(opt)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fed")
	if err := dataset.WriteFederation(dir, fed); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestCampaignFileErrors: a bad campaign file is rejected with exit status 2
// before anything starts, and the message names the offending field.
func TestCampaignFileErrors(t *testing.T) {
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "never-created")
	cases := []struct {
		file string
		want string // in the error message
	}{
		{"method: ptopofl\nbogus: 1\n", "field bogus not found"},                                // 0 unknown key
		{"method: nope\n", `method "nope"`},                                                     // 1
		{"method: fedavg\npreset: fast\n", `preset "fast"`},                                     // 2
		{"method: fedavg\nrounds: 0\n", "rounds = 0"},                                           // 3
		{"method: fedavg\nround_deadline: soon\n", "round_deadline"},                            // 4 duration
		{"method: fedavg\nmin_sites: 9\n", "min_sites = 9"},                                     // 5 quorum above the sites
		{"method: ptopofl\nhyperparameters: {beta: 2}\n", "hyperparameters.beta"},               // 6 range
		{"method: ptopofl\nhyperparameters: {betta: 0.1}\n", `hyperparameter "betta": unknown`}, // 7 typo
		{"method: fedavg\nsites: [site0, nowhere]\n", `"nowhere"`},                              // 8 site not in the federation
		{"method: fedavg\nsites: [site0, site0]\n", "duplicate"},                                // 9
		{"method: fedavg\ndescriptor_rows: {siteX: [1]}\n", `descriptor_rows["siteX"]`},         // 10
		{"method: fedavg\ncampaign: \"bad name/x\"\n", "campaign"},                              // 11
		{"method: fedprox\nhyperparameters: {lr: -1}\n", "hyperparameters.lr"},                  // 12
		{"method: fedavg\nrounds: many\n", "line 2"},                                            // 13 wrong type
		{"method: fedavg\nhyperparameters: {clusters: \"two\"}\n", "clusters"},                  // 14 wrong type in hyperparameters
		{"method: fedavg\nsite_activity_timeout: -1s\n", "site_activity_timeout"},               // 15
		{"method: fedavg\ncontinue_as_new_every: -2\n", "continue_as_new_every"},                // 16
	}
	for i, c := range cases {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte(c.file), 0o644)
		code, stdout, stderr := runCLI("run", path, "--local", "--data-dir", dataDir, "--federation", fed)
		if code != exitInput || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%d: exit %d, stderr %q, stdout %q; want exit 2 naming %q", i, code, stderr, stdout, c.want)
		}
	}
	if _, err := os.Stat(dataDir); err == nil {
		t.Errorf("a rejected campaign created the stack's data directory")
	}
}

// TestFlagErrors: bad flags exit 2 naming the flag.
func TestFlagErrors(t *testing.T) {
	fed := smallFederation(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--local", "--method", "fedavg"}, "--federation"},                                                            // 0
		{[]string{"run", "--local", "--federation", fed, "--method", "x"}, `method "x"`},                                              // 1
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--format", "xml"}, "--format"},                        // 2
		{[]string{"run", "--method", "fedavg", "--federation", fed}, "--temporal"},                                                    // 3 neither local nor remote
		{[]string{"run", "--local", "--federation", fed, "--method", "ptopofl", "--set", "nope=1"}, `hyperparameter "nope": unknown`}, // 4
		{[]string{"run", "--local", "--federation", "/nonexistent", "--method", "fedavg"}, "no <site>_train.csv"},                     // 5
		{[]string{"status"}, "CAMPAIGN"},                                                   // 6
		{[]string{"frobnicate"}, "unknown command"},                                        // 7
		{[]string{"table", "--local", "--federation", fed, "--variant", "x"}, "--variant"}, // 8
		// Model "external": the trainer must be the in-process sites' (9,
		// 10), well formed (11, 12), given only with --local (13); the
		// method must be one the protocol carries (14), and the model
		// needs a trainer (15) and an initial model that is a model (16).
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--set", "model=external", "--set", "trainer=torch"}, `trainer "torch"`},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--set", "model=external", "--set", "trainer=torch", "--trainer", "go=/bin/true"}, "--trainer torch=COMMAND"},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--trainer", "go"}, "want NAME=COMMAND"},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--trainer", "a b=/bin/true"}, "the name must be"},
		{[]string{"run", "--method", "fedavg", "--federation", fed, "--temporal", "127.0.0.1:1", "--s3", "http://127.0.0.1:1", "--trainer", "go=/bin/true"}, "only the site workers of --local"},
		{[]string{"run", "--local", "--federation", fed, "--method", "scaffold", "--set", "model=external", "--set", "trainer=go", "--trainer", "go=/bin/true"}, "method scaffold: needs state"},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--set", "model=external"}, "hyperparameters.trainer"},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--set", "model=external", "--set", "trainer=go", "--initial-model", fed + "/federation.json"}, "initial_model"},
		// Serve mode, the sealed environment's additions and the slots
		// (17-20): a name given in both modes, a PTOPOFL_ variable, no
		// slot, and --trainer-env without a program.
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--trainer", "go=/bin/true", "--trainer-serve", "go=/bin/cat"}, "given twice"},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--trainer-serve", "go=/bin/cat", "--trainer-env", "PTOPOFL_S3_SECRET_KEY"}, "PTOPOFL_ variables"},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--trainer-serve", "go=/bin/cat", "--trainer-slots", "0"}, "--trainer-slots 0"},
		{[]string{"run", "--local", "--federation", fed, "--method", "fedavg", "--trainer-env", "CUDA_VISIBLE_DEVICES"}, "no --trainer or --trainer-serve"},
	}
	for i, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%d: %v: exit %d, stderr %q; want exit 2 naming %q", i, c.args, code, stderr, c.want)
		}
	}
}

// TestRunJSONContract runs a 3-round, 3-site campaign on the in-process
// local stack and checks the shape of the JSON contract scripts rely on;
// a second run with the same data directory re-attaches to the finished
// campaign and prints the same result.
func TestRunJSONContract(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	rows := filepath.Join(t.TempDir(), "rows.json")
	os.WriteFile(rows, []byte(`{"site0": [0,1,2,3,4,5,6,7,8,9,10,11], "site2": [3,4,5,6,7,8,9,10,11,12]}`), 0o644)
	args := []string{"run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "ptopofl",
		"--preset", "paper", "--rounds", "3", "--seed", "11", "--descriptor-rows", rows, "--format", "json"}
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("--format json should be quiet on stderr, got %q", stderr)
	}
	if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Errorf("want one JSON object on one line, got %q", stdout)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"method", "final_auc", "final_acc", "conv_round", "auc_curve", "acc_curve", "clusters", "trust", "flagged"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("contract key %q missing", k)
		}
	}
	var r struct {
		Method    string             `json:"method"`
		FinalAUC  float64            `json:"final_auc"`
		FinalAcc  float64            `json:"final_acc"`
		ConvRound int                `json:"conv_round"`
		AUCCurve  []float64          `json:"auc_curve"`
		AccCurve  []float64          `json:"acc_curve"`
		Clusters  map[string]int     `json:"clusters"`
		Trust     map[string]float64 `json:"trust"`
		Flagged   []string           `json:"flagged"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("contract types: %v\n%s", err, stdout)
	}
	if r.Method != "ptopofl" || len(r.AUCCurve) != 3 || len(r.AccCurve) != 3 {
		t.Errorf("method %q, %d AUC and %d acc points; want ptopofl, 3, 3", r.Method, len(r.AUCCurve), len(r.AccCurve))
	}
	if r.FinalAUC != r.AUCCurve[2] || r.FinalAcc != r.AccCurve[2] || r.ConvRound < 1 || r.ConvRound > 3 {
		t.Errorf("final_auc %v, final_acc %v, conv_round %d inconsistent with the curves %v %v", r.FinalAUC, r.FinalAcc, r.ConvRound, r.AUCCurve, r.AccCurve)
	}
	if len(r.Clusters) != 3 || len(r.Trust) != 3 || r.Flagged == nil {
		t.Errorf("clusters %v, trust %v, flagged %v: want every site clustered and scored, flagged a list", r.Clusters, r.Trust, r.Flagged)
	}

	code, again, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("second run: exit %d\n%s", code, stderr)
	}
	var r2 map[string]any
	json.Unmarshal([]byte(again), &r2)
	var r1 map[string]any
	json.Unmarshal([]byte(stdout), &r1)
	delete(r1, "wall_seconds")
	delete(r2, "wall_seconds")
	b1, _ := json.Marshal(r1)
	b2, _ := json.Marshal(r2)
	if !bytes.Equal(b1, b2) {
		t.Errorf("re-running re-attaches to the same campaign and result:\nfirst  %s\nsecond %s", b1, b2)
	}

	// history reads the three manifests back.
	name, _ := r1["campaign"].(string)
	code, hist, stderr := runCLI("history", name, "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	var h struct {
		Rounds []campaign.HistoryRow `json:"rounds"`
	}
	if err := json.Unmarshal([]byte(hist), &h); err != nil || len(h.Rounds) != 3 {
		t.Fatalf("history: %v, %s", err, hist)
	}
	if h.Rounds[1].PrevSHA256 != h.Rounds[0].SHA256 || len(h.Rounds[2].Clusters) != 3 {
		t.Errorf("history rows: %+v", h.Rounds)
	}
	code, ls, _ := runCLI("ls", "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK || !strings.Contains(ls, name) {
		t.Errorf("ls: exit %d, %s", code, ls)
	}
}
