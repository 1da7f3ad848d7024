package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/textout"
)

// The campaigns TestConsoleInBrowser runs: a pTopoFL campaign, the same
// under dp record, an adaptive sweep (five trials, ASHA promoting one to
// the last round) and a campaign kept running (every site activity held
// 1 s) while its page is open. Tiny on purpose: the test checks the
// console, not the method.
const (
	consolePtopofl = `campaign: console-ptopofl
method: ptopofl
rounds: 3
seed: 7
`
	consoleDP = `campaign: console-dp
method: ptopofl
rounds: 3
seed: 7
hyperparameters: {dp: record, dp_epsilon: 8}
`
	consoleSweep = `sweep: console-sweep
rounds: 3
seeds: [1]
methods: [ptopofl]
federations: [{name: hc, path: FED}]
hyperparameters: {validation_fraction: 0.2}
concurrency: 2
search:
  - {name: lr, log_uniform: [0.003, 0.3]}
  - {name: beta, uniform: [0, 1]}
  - {name: clusters, choice: [1, 2]}
strategy: asha
budget: {campaign_rounds: 0, trials: 5}
asha: {min_rounds: 1, eta: 3}
seed: 1
`
	consoleLive = `campaign: console-live
method: fedavg
rounds: 500
seed: 7
sites: [site0, site1]
site_activity_timeout: 30s
round_deadline: 5m
`
)

// pageEvents is what the browser reported while the test's pages were
// open: messages of their consoles at level error, uncaught exceptions,
// the browser's own errors about a page (a failed load, a blocked
// request: what a Content-Security-Policy refuses is reported there), and
// every URL requested.
type pageEvents struct {
	mu       sync.Mutex
	errors   []string
	requests []string
}

func (e *pageEvents) on(method string, params json.RawMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		if json.Unmarshal(params, &p) == nil && (p.Type == "error" || p.Type == "assert") {
			var parts []string
			for _, a := range p.Args {
				parts = append(parts, fmt.Sprint(a.Value)+a.Description)
			}
			e.errors = append(e.errors, "console."+p.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		var p struct {
			Details struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		if json.Unmarshal(params, &p) == nil {
			e.errors = append(e.errors, "exception: "+p.Details.Text+" "+p.Details.Exception.Description)
		}
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level, Text, URL string
			} `json:"entry"`
		}
		if json.Unmarshal(params, &p) == nil && p.Entry.Level == "error" {
			e.errors = append(e.errors, "log: "+p.Entry.Text+" "+p.Entry.URL)
		}
	case "Network.requestWillBeSent":
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		if json.Unmarshal(params, &p) == nil {
			e.requests = append(e.requests, p.Request.URL)
		}
	}
}

// take returns what was reported since the last take, and forgets it.
func (e *pageEvents) take() (errors, requests []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	errors, requests = e.errors, e.requests
	e.errors, e.requests = nil, nil
	return errors, requests
}

// foreign are the requests to another origin than base (data: URLs
// included: a page must not need them either).
func foreign(requests []string, base string) []string {
	var out []string
	for _, r := range requests {
		if !strings.HasPrefix(r, base+"/") && r != base {
			out = append(out, r)
		}
	}
	return out
}

// cells returns the text of the td elements of class class in the table
// row <tr attr="value">, in order.
func cells(dom, attr, value, class string) []string {
	row := regexp.MustCompile(`(?s)<tr ` + regexp.QuoteMeta(attr) + `="` + regexp.QuoteMeta(value) + `"[^>]*>(.*?)</tr>`).FindStringSubmatch(dom)
	if row == nil {
		return nil
	}
	re := regexp.MustCompile(`(?s)<td class="(?:[^"]*\s)?` + regexp.QuoteMeta(class) + `(?:\s[^"]*)?"[^>]*>(.*?)</td>`)
	if class == "" {
		re = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	}
	var out []string
	for _, m := range re.FindAllStringSubmatch(row[1], -1) {
		out = append(out, strings.TrimSpace(pageText(m[1])))
	}
	return out
}

func cell(dom, attr, value, class string) string {
	if c := cells(dom, attr, value, class); len(c) > 0 {
		return c[0]
	}
	return "<no cell>"
}

// byID is the text of the element with id.
func byID(dom, id string) string {
	m := regexp.MustCompile(`(?s)<(\w+)[^>]* id="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</(\w+)>`).FindStringSubmatch(dom)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(pageText(m[2]))
}

// TestConsoleInBrowser runs `starter console --local` over a local stack
// holding a finished pTopoFL campaign, a finished dp record campaign, an
// adaptive sweep and a running campaign, and opens every page in headless
// Chromium (Debian's chromium, one browser for the whole test, driven over
// the DevTools protocol). Every round of both campaigns must show its mean
// AUC and accuracy as `starter history` prints them, its sites, flagged
// sites and largest drift, and a manifest link whose bytes hash to the
// sha256 shown; the dp campaign every site's ε of every round; the sweep
// every trial with its rounds, status, validation and test AUC as `starter
// sweep --format json` reports them; the running campaign's page its round
// count advancing without a reload. No page may write an error to its
// console or request anything from another origin; a control page with
// both must be caught first. /api/campaigns must list every campaign; bad
// paths answer 404 without a trace, writes 405; a non-loopback --addr
// without a certificate is refused naming the flags. Screenshots of every
// page go to PTOPOFL_TEST_OUT/TestConsoleInBrowser (docs/how-to/console.md
// shows them).
func TestConsoleInBrowser(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed: the console's browser test needs Debian's chromium (.ci/run installs it; apt-get install chromium)")
	}
	devstackBin, workerBin, starterBin, gendataBin := bin(t, "devstack"), bin(t, "worker"), bin(t, "starter"), bin(t, "gendata")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	tmp := t.TempDir()
	out := testOut(t)
	logs := filepath.Join(tmp, "logs")
	os.MkdirAll(logs, 0o755)
	t.Cleanup(func() { dumpLogsOnFailure(t, logs) })

	// The refusal comes before anything starts.
	cmd := exec.CommandContext(ctx, starterBin, "console", "--addr", "0.0.0.0:0", "--local", "--data-dir", filepath.Join(tmp, "unused"))
	msg, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(msg), "--tls-cert") || !strings.Contains(string(msg), "--tls-key") || !strings.Contains(string(msg), "--tls-client-ca") {
		t.Fatalf("starter console --addr 0.0.0.0:0: exit %d (%v), %q; want exit 2 naming --tls-cert, --tls-key and --tls-client-ca", code, err, msg)
	}

	fed := filepath.Join(tmp, "fed")
	if b, err := exec.CommandContext(ctx, gendataBin, "healthcare", "--seed", "3", "--sites", "4", "--adversarial", "1", "--out", fed).CombinedOutput(); err != nil {
		t.Fatalf("gendata: %v\n%s", err, b)
	}
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := filepath.Join(tmp, "stack")
	tport, s3port := freeRun(t, 4), freeRun(t, 1)
	stack := start(t, logs, "devstack", nil, devstackBin, "--data", data, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(s3port))
	waitForFile(t, ctx, stack, filepath.Join(data, "endpoints.json"))
	local := []string{"--local", "--data-dir", data}
	starter := func(args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, starterBin, append(args, local...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("starter %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 3000))
		}
		return b
	}
	starter("run", write("ptopofl.yaml", consolePtopofl), "--federation", fed, "--format", "json")
	starter("run", write("dp.yaml", consoleDP), "--federation", fed, "--format", "json")
	var sweep campaign.SweepOutput
	if err := json.Unmarshal(starter("sweep", write("sweep.yaml", strings.ReplaceAll(consoleSweep, "FED", fed)), "--format", "json"), &sweep); err != nil {
		t.Fatal(err)
	}
	history := map[string]textout.History{}
	for _, c := range []string{"console-ptopofl", "console-dp"} {
		var h textout.History
		if err := json.Unmarshal(starter("history", c, "--format", "json"), &h); err != nil || len(h.Rounds) != 3 {
			t.Fatalf("history %s: %d rounds (%v)", c, len(h.Rounds), err)
		}
		history[c] = h
	}
	t.Logf("two campaigns and a sweep of %d campaigns on the local stack (%v)", len(sweep.Rows), time.Since(t0).Round(time.Millisecond))

	// The running campaign: a server worker and two site workers of their
	// own, each site activity held 1 s, so that rounds come every few
	// seconds while the page is open.
	env := readEnvFile(t, filepath.Join(data, "credentials.env"))
	conn := []string{"--temporal", "127.0.0.1:" + strconv.Itoa(tport), "--namespace", "default", "--s3", "http://127.0.0.1:" + strconv.Itoa(s3port),
		"--bucket", "ptopofl", "--payload-key-file", filepath.Join(data, "payload-keys")}
	start(t, logs, "server", env, workerBin, append([]string{"--role", "server"}, conn...)...)
	for _, s := range []string{"site0", "site1"} {
		start(t, logs, "site-"+s, env, workerBin, append([]string{"--role", "site", "--site", s, "--data", fed, "--fault-delay", "1s"}, conn...)...)
	}
	cmd = exec.CommandContext(ctx, starterBin, append([]string{"run", write("live.yaml", consoleLive), "--federation", fed, "--detach", "--format", "json"}, conn...)...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter run --detach: %v\n%s", err, b)
	}

	// The console, on a free loopback port: its one line on stdout.
	console := exec.Command(starterBin, append([]string{"console", "--refresh", "1s"}, local...)...)
	console.Stderr, _ = os.Create(filepath.Join(logs, "console.log"))
	stdout, err := console.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := console.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(console.Process.Pid, syscall.SIGTERM); console.Wait() })
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- line
		io.Copy(io.Discard, stdout)
	}()
	var base string
	select {
	case line := <-first:
		var ok bool
		if base, ok = strings.CutPrefix(strings.TrimSpace(line), "console "); !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Fatalf("starter console printed %q; want one line \"console http://127.0.0.1:PORT\"", line)
		}
	case <-ctx.Done():
		t.Fatal("starter console printed nothing")
	}
	t.Logf("%s (%v)", base, time.Since(t0).Round(time.Millisecond))

	checkConsoleHTTP(t, ctx, base, sweep)

	b := startBrowser(t, ctx)
	var ev pageEvents
	if err := b.watch(ctx, ev.on, "Runtime", "Log", "Network"); err != nil {
		t.Fatal(err)
	}
	if err := b.call(ctx, b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}

	// The control: a page with a console error and a request to another
	// origin must be caught, or the checks below could see nothing.
	control := `<!DOCTYPE html><html><head><title>control</title></head><body><script>console.error("the control's console error")</script><img src="http://localhost:9/control.png" alt="elsewhere"></body></html>`
	if _, err := b.load(ctx, "data:text/html;charset=utf-8,"+url.PathEscape(control), 20*time.Second, func(dom string) bool { return strings.Contains(dom, "control.png") }, ""); err != nil {
		t.Fatal(err)
	}
	var errs, reqs []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		e, r := ev.take()
		errs, reqs = append(errs, e...), append(reqs, r...)
		if anyContains(errs, "the control's console error") && anyContains(reqs, "http://localhost:9/control.png") {
			break
		}
	}
	if !anyContains(errs, "the control's console error") || !anyContains(reqs, "http://localhost:9/control.png") {
		t.Fatalf("the control page's console error and request elsewhere were not both seen (errors %q, requests %q): the checks would see nothing", errs, reqs)
	}

	// page loads path, waits until ready accepts its DOM, writes a
	// full-page screenshot shot.png, and fails on a console error or a
	// request elsewhere.
	page := func(path, shot string, ready func(dom string) bool) string {
		t.Helper()
		dom, err := b.load(ctx, base+path, 60*time.Second, func(dom string) bool { return strings.Contains(dom, `id="content"`) && ready(dom) }, "")
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, tail(pageText(dom), 3000))
		}
		fullScreenshot(t, ctx, b, filepath.Join(out, shot+".png"))
		var errs, reqs []string
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			e, r := ev.take()
			errs, reqs = append(errs, e...), append(reqs, r...)
			if slices.ContainsFunc(reqs, func(r string) bool { return strings.HasSuffix(r, "/static/console.css") }) || time.Now().After(deadline) {
				break
			}
		}
		if len(errs) > 0 {
			t.Errorf("%s wrote to its console: %q", path, errs)
		}
		if f := foreign(reqs, base); len(f) > 0 {
			t.Errorf("%s requested from another origin: %q", path, f)
		}
		if !slices.ContainsFunc(reqs, func(r string) bool { return strings.HasSuffix(r, "/static/console.css") }) {
			t.Errorf("%s: no request for its stylesheet seen (requests %q): the request check sees nothing", path, reqs)
		}
		return dom
	}

	// The campaigns.
	sweepNames := make([]string, len(sweep.Rows))
	for i, r := range sweep.Rows {
		sweepNames[i] = r.Campaign
	}
	all := append([]string{"console-ptopofl", "console-dp", "console-live"}, sweepNames...)
	dom := page("/", "console-campaigns", func(dom string) bool {
		for _, c := range all {
			if !strings.Contains(dom, `data-campaign="`+c+`"`) {
				return false
			}
		}
		return strings.Contains(dom, `data-sweep="console-sweep"`)
	})
	for c, h := range history {
		last := h.Rounds[len(h.Rounds)-1]
		want := map[string]string{"rounds": "3/3", "auc": fmt.Sprintf("%.4f", last.MeanAUC), "acc": fmt.Sprintf("%.4f", last.MeanAcc), "state": "done", "method": "ptopofl"}
		if last.Privacy != nil {
			want["eps"] = fmt.Sprintf("%.3f of %g", last.Privacy.Epsilon(), last.Privacy.Budget)
		}
		for class, w := range want {
			if got := cell(dom, "data-campaign", c, class); got != w {
				t.Errorf("campaigns page: %s's %s %q, want %q", c, class, got, w)
			}
		}
	}
	for _, r := range sweep.Rows {
		if got, w := cell(dom, "data-campaign", r.Campaign, "auc"), fmt.Sprintf("%.4f", r.FinalAUC); got != w {
			t.Errorf("campaigns page: %s's final AUC %q, want %q", r.Campaign, got, w)
		}
	}
	dom = page("/?sweep=console-sweep", "console-campaigns-filtered", func(dom string) bool { return strings.Contains(dom, `id="campaign-count"`) })
	if got, want := byID(dom, "campaign-count"), fmt.Sprintf("%d of %d campaigns", len(sweep.Rows), len(all)); got != want {
		t.Errorf("campaigns page filtered by sweep: %q, want %q", got, want)
	}

	// Each finished campaign: every round as history prints it, the
	// manifests' bytes, ε per site.
	for c, h := range history {
		dom := page("/campaigns/"+c, "console-campaign-"+strings.TrimPrefix(c, "console-"), func(dom string) bool {
			return strings.Contains(dom, `data-round="3"`) && strings.Contains(dom, `id="chart-auc"`)
		})
		for _, r := range h.Rounds {
			maxDrift := 0.0
			for _, d := range r.Drift {
				maxDrift = max(maxDrift, d)
			}
			flagged := "–"
			if len(r.Flagged) > 0 {
				flagged = strings.Join(r.Flagged, ",")
			}
			want := map[string]string{"auc": fmt.Sprintf("%.4f", r.MeanAUC), "acc": fmt.Sprintf("%.4f", r.MeanAcc), "sites": strconv.Itoa(len(r.Participants)),
				"flagged": flagged, "drift": fmt.Sprintf("%.4f", maxDrift), "outcome": r.Outcome, "sha": r.SHA256[:12]}
			round := strconv.Itoa(r.Round)
			for class, w := range want {
				if got := cell(dom, "data-round", round, class); got != w {
					t.Errorf("%s round %d: %s %q, want %q (history)", c, r.Round, class, got, w)
				}
			}
			link := regexp.MustCompile(`<tr data-round="` + round + `">(?s:.*?)<td class="sha"><a href="([^"]+)"`).FindStringSubmatch(dom)
			if link == nil {
				t.Errorf("%s round %d: no manifest link", c, r.Round)
				continue
			}
			body := httpGet(t, ctx, base+link[1], http.StatusOK)
			if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != r.SHA256 {
				t.Errorf("%s round %d: %s hashes to %x, history says %s", c, r.Round, link[1], sum, r.SHA256)
			}
			if r.Privacy != nil {
				for _, sp := range r.Privacy.Sites {
					if got := cells(dom, "data-site", sp.Site, ""); len(got) < r.Round || got[r.Round-1] != fmt.Sprintf("%.3f", sp.Epsilon) {
						t.Errorf("%s round %d: %s's ε %q, want %.3f", c, r.Round, sp.Site, got, sp.Epsilon)
					}
				}
			}
		}
		if !strings.Contains(dom, `id="web-ui"`) {
			t.Errorf("%s: no link to its workflow in the Temporal Web UI", c)
		}
		if h.Rounds[0].Privacy != nil && !strings.Contains(dom, `id="chart-epsilon"`) {
			t.Errorf("%s: no ε chart", c)
		}
		if strings.Contains(c, "ptopofl") && !strings.Contains(dom, `id="heat-trust"`) {
			t.Errorf("%s: no heat map of clusters and trust", c)
		}
	}
	dom = page("/campaigns/console-ptopofl/verify", "console-verify", func(dom string) bool { return strings.Contains(dom, `id="verdict"`) })
	if v := byID(dom, "verdict"); !strings.HasPrefix(v, "ok: verified 3 rounds") {
		t.Errorf("verify page: %q, want ok: verified 3 rounds …", v)
	}

	// The sweep: every trial as the sweep reported it.
	dom = page("/sweeps/console-sweep", "console-sweep", func(dom string) bool {
		return strings.Contains(dom, `id="parallel"`) && strings.Contains(dom, `id="chart-best"`)
	})
	for _, r := range sweep.Rows {
		label := r.Setting
		want := map[string]string{"rounds": strconv.Itoa(r.RoundsDone), "objective": fmt.Sprintf("%.4f", r.FinalValAUC), "test-auc": fmt.Sprintf("%.4f", r.FinalAUC), "status": r.Status}
		for class, w := range want {
			if got := cell(dom, "data-trial", label, class); got != w {
				t.Errorf("sweep page: trial %s's %s %q, want %q (starter sweep)", label, class, got, w)
			}
		}
	}
	for _, id := range []string{"rungs", "chart-trials"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("sweep page: no #%s", id)
		}
	}

	dom = page("/compare?campaign=console-ptopofl&campaign=console-dp", "console-compare", func(dom string) bool { return strings.Contains(dom, `id="compare-auc"`) })
	for c, h := range history {
		if got, want := cell(dom, "data-campaign", c, "auc"), fmt.Sprintf("%.4f", h.Rounds[2].MeanAUC); got != want {
			t.Errorf("compare: %s's final AUC %q, want %q", c, got, want)
		}
	}

	// The running campaign: its page's round count advances while open,
	// without a reload (a mark left in the page survives).
	dom = page("/campaigns/console-live", "console-campaign-running", func(dom string) bool {
		n, _ := strconv.Atoi(byID(dom, "rounds-done"))
		return n >= 1 && strings.Contains(dom, `data-live="true"`)
	})
	n0, _ := strconv.Atoi(byID(dom, "rounds-done"))
	shown0 := byID(dom, "updated")
	if err := b.call(ctx, b.session, "Runtime.evaluate", map[string]any{"expression": `window.consoleTestMark = "no reload"`}, nil); err != nil {
		t.Fatal(err)
	}
	dom, err = b.wait(ctx, base+"/campaigns/console-live", 90*time.Second, func(dom string) bool {
		n, _ := strconv.Atoi(byID(dom, "rounds-done"))
		return n > n0
	}, "")
	if err != nil {
		t.Fatalf("the running campaign's page stayed at round %d: %v", n0, err)
	}
	var mark struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := b.call(ctx, b.session, "Runtime.evaluate", map[string]any{"expression": "window.consoleTestMark", "returnByValue": true}, &mark); err != nil || mark.Result.Value != "no reload" {
		t.Errorf("the running campaign's page was reloaded (mark %q, %v)", mark.Result.Value, err)
	}
	n1, _ := strconv.Atoi(byID(dom, "rounds-done"))
	if shown1 := byID(dom, "updated"); shown1 == "" || shown1 == shown0 {
		t.Errorf("\"last updated\" %q, then %q: it must show the last news", shown0, shown1)
	}
	if errs, reqs := ev.take(); len(errs) > 0 || len(foreign(reqs, base)) > 0 {
		t.Errorf("the running campaign's page, while it refreshed: console %q, requests elsewhere %q", errs, foreign(reqs, base))
	}
	t.Logf("the running campaign's page went from round %d to %d without a reload", n0, n1)
	if t.Failed() {
		return
	}
	t.Logf("every page checked in Chromium (%v in all); screenshots in %s", time.Since(t0).Round(time.Millisecond), out)
}

// checkConsoleHTTP checks what needs no browser: /api/campaigns lists
// every campaign with the fields scripts rely on, the security headers,
// 404 for bad paths with no trace, 405 for writes.
func checkConsoleHTTP(t *testing.T, ctx context.Context, base string, sweep campaign.SweepOutput) {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal(httpGet(t, ctx, base+"/api/campaigns", http.StatusOK), &rows); err != nil {
		t.Fatalf("/api/campaigns: %v", err)
	}
	listed := map[string]bool{}
	for i, r := range rows {
		for _, k := range []string{"campaign", "method", "state", "rounds_done"} {
			if _, ok := r[k]; !ok {
				t.Errorf("/api/campaigns[%d] has no %q: %v", i, k, r)
			}
		}
		listed[fmt.Sprint(r["campaign"])] = true
	}
	want := []string{"console-ptopofl", "console-dp", "console-live"}
	for _, r := range sweep.Rows {
		want = append(want, r.Campaign)
	}
	for _, c := range want {
		if !listed[c] {
			t.Errorf("/api/campaigns does not list %s", c)
		}
	}
	var d struct {
		Campaign string `json:"campaign"`
		Rounds   []any  `json:"rounds"`
	}
	if err := json.Unmarshal(httpGet(t, ctx, base+"/api/campaigns/console-ptopofl", http.StatusOK), &d); err != nil || d.Campaign != "console-ptopofl" || len(d.Rounds) != 3 {
		t.Errorf("/api/campaigns/console-ptopofl: %+v (%v)", d, err)
	}
	for _, p := range []string{"/campaigns/no-such-campaign", "/no/such/page", "/api/campaigns/no-such-campaign", "/sweeps/no-such-sweep", "/campaigns/console-ptopofl/round-0009/manifest.json", "/campaigns/bad%20name!", "/static/../go.mod"} {
		body := httpGet(t, ctx, base+p, http.StatusNotFound)
		if s := string(body); strings.Contains(s, "goroutine") || strings.Contains(s, ".go:") {
			t.Errorf("%s: 404 with a trace: %.300s", p, s)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/campaigns", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/campaigns: %s, want 405", resp.Status)
	}
	resp, err = http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("security headers missing: %v", resp.Header)
	}
}

func httpGet(t *testing.T, ctx context.Context, u string, want int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Errorf("GET %s: %s, want %d: %.300s", u, resp.Status, want, b)
	}
	return b
}

// fullScreenshot writes a PNG of the whole page, not just the window (at
// most 6000 px tall).
func fullScreenshot(t *testing.T, ctx context.Context, b *cdpBrowser, path string) {
	t.Helper()
	var m struct {
		Content struct {
			Width, Height float64
		} `json:"cssContentSize"`
	}
	if err := b.call(ctx, b.session, "Page.getLayoutMetrics", nil, &m); err != nil {
		t.Fatal(err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	clip := map[string]any{"x": 0, "y": 0, "width": m.Content.Width, "height": min(m.Content.Height, 6000), "scale": 1}
	if err := b.call(ctx, b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true, "clip": clip}, &shot); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) == 0 {
		t.Fatalf("screenshot %s: %d bytes (%v)", path, len(png), err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
