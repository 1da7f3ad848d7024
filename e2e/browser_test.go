package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/pipeline"
)

// EnvTestOut names the directory the deployment tests keep their
// screenshots in (make test-deploy: out/test-deploy); unset, a temporary
// directory removed after the test.
const EnvTestOut = "PTOPOFL_TEST_OUT"

// testOut is the directory for the test's screenshots.
func testOut(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvTestOut)
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chromiumBin is Debian's chromium, which make test-deploy installs.
func chromiumBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (make test-deploy installs Debian's chromium): %v", err)
	}
	return p
}

// consoleLine is how chromium --enable-logging=stderr reports a message
// of the page's console. TestReportInBrowser's control page fails the test
// if a change of this format would make the check see nothing.
var consoleLine = regexp.MustCompile(`:CONSOLE:\d+\] (.*)`)

// browse loads url in headless Chromium (a browser of its own, whose
// console log is Chromium's stderr), lets the page run for budget of
// virtual time, and returns the DOM then, and the messages the page wrote
// to its console. With screenshot set, the same run also writes a PNG of
// the page there.
func browse(t *testing.T, ctx context.Context, url string, budget time.Duration, screenshot string) (dom string, console []string) {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--window-size=1600,1000",
		"--virtual-time-budget=" + strconv.Itoa(int(budget.Milliseconds())), "--dump-dom"}
	if screenshot != "" {
		args = append(args, "--screenshot="+screenshot)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, chromiumBin(t), append(args, url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, tail(stderr.String(), 2000))
	}
	for _, m := range consoleLine.FindAllStringSubmatch(stderr.String(), -1) {
		console = append(console, m[1])
	}
	if screenshot != "" {
		if fi, err := os.Stat(screenshot); err != nil || fi.Size() == 0 {
			t.Fatalf("chromium %s: screenshot %s: %v", url, screenshot, err)
		}
	}
	return string(out), console
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var (
	markup     = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)
	whitespace = regexp.MustCompile(`\s+`)
)

// pageText is the text a DOM shows: tags, scripts and styles dropped,
// entities decoded, runs of white space made one space.
func pageText(dom string) string {
	return whitespace.ReplaceAllString(html.UnescapeString(markup.ReplaceAllString(dom, " ")), " ")
}

// roundActivities are the activities every round of the deploy campaign
// (fedprox: no descriptors, no clustering) shows in its event history:
// the site activities as scheduled activities, the server's as local
// activities (workflows/round.go), whose type the UI shows in the
// marker's details. It can because the deploy test's workers run without
// payload keys; with keys the UI shows an encrypted marker and no type.
var roundActivities = []string{
	"Activity Type " + pipeline.ActivityTrainLocal,
	"Activity Type " + pipeline.ActivityEvaluate,
	"Local Activity Activity Type " + pipeline.ActivityAggregate,
	"Local Activity Activity Type " + pipeline.ActivityCommitRound,
}

// uiPageWait bounds the wait for one page of the Web UI to show what the
// check looks for; pages take seconds, more on a loaded machine.
const uiPageWait = 90 * time.Second

// checkWebUI opens the devstack's Temporal Web UI in headless Chromium at
// the campaign's own workflow page, and from there:
//
//   - every run of the campaign (it continues as new every few rounds,
//     workflows/campaign.go): the UI's campaign page is its latest run's,
//     and a run's Relationships view lists that run's child workflows (a
//     visibility query by ParentWorkflowId and ParentRunId) and links to
//     the previous and the first run, so the check follows those links
//     until it has seen every run. Together the runs must list each round
//     workflow <campaign>/round-0001 … round-<rounds>, each under one run.
//   - every round's event history page: it must list the round's
//     activities (roundActivities). Its first page holds 100 events, which
//     a round of the deploy test's 4 sites stays well within.
//
// A page counts once it shows its own tab links (…/<id>/<run>/call-stack)
// and what is checked on it, so the previous page's DOM is never read for
// it. The campaign's pages are loaded as new documents. The rounds' pages
// are followed inside the app (cdpBrowser.follow), which is safe because
// the UI's run layout empties its event history whenever the workflow or
// run in the address changes, before it fetches the new one (ui-server
// v2.55.0, the layout of workflows/[workflow]/[run]): a round's page never
// shows another round's events. Screenshots of the campaign page, of each
// run's relationships and of each round's history go to out.
func checkWebUI(t *testing.T, ctx context.Context, uiURL, campaign string, rounds int, out string) {
	t.Helper()
	t0 := time.Now()
	b := startBrowser(t, ctx)
	ns := "default"
	esc := url.PathEscape(campaign)
	runLink := regexp.MustCompile(`/workflows/` + regexp.QuoteMeta(esc) + `/([0-9a-f-]{36})/`)
	roundLink := regexp.MustCompile(`/workflows/` + regexp.QuoteMeta(esc+url.PathEscape("/round-")) + `(\d{4})/([0-9a-f-]{36})/`)
	ownTabs := func(escapedID, run string) string { return "/workflows/" + escapedID + "/" + run + "/call-stack" }

	// The campaign's page: the UI opens its latest run.
	page := uiURL + "/namespaces/" + ns + "/workflows/" + esc
	shot := filepath.Join(out, "campaign.png")
	dom, err := b.load(ctx, page, uiPageWait, func(dom string) bool {
		return strings.Contains(pageText(dom), pipeline.CampaignWorkflowName) && runLink.MatchString(dom)
	}, shot)
	if err != nil {
		t.Fatalf("web UI: the campaign page shows no run of a %s: %v", pipeline.CampaignWorkflowName, err)
	}
	latest := runLink.FindStringSubmatch(dom)[1]
	t.Logf("web UI: campaign page %s opens run %s (screenshot %s)", page, latest, shot)

	// The runs, from the latest back to the first.
	roundRun := map[int]string{} // round → its workflow's run ID
	seen, queue := map[string]bool{latest: true}, []string{latest}
	for n := 1; len(queue) > 0; n++ {
		run := queue[0]
		queue = queue[1:]
		page := fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/relationships", uiURL, ns, esc, run)
		shot := filepath.Join(out, fmt.Sprintf("campaign-run-%d.png", n))
		dom, err := b.load(ctx, page, uiPageWait, func(dom string) bool {
			return strings.Contains(dom, ownTabs(esc, run)) && roundLink.MatchString(dom)
		}, shot)
		if err != nil {
			t.Fatalf("web UI: run %s of %s lists no round workflow: %v", run, campaign, err)
		}
		var children []int
		for _, c := range roundLink.FindAllStringSubmatch(dom, -1) {
			r, _ := strconv.Atoi(c[1])
			prev, ok := roundRun[r]
			if ok && prev != c[2] {
				t.Errorf("web UI: round %d listed with two runs of its workflow (%s, %s)", r, prev, c[2])
			}
			if !ok {
				children = append(children, r)
				roundRun[r] = c[2]
			}
		}
		t.Logf("web UI: campaign run %s lists rounds %v (screenshot %s)", run, children, shot)
		for _, l := range runLink.FindAllStringSubmatch(dom, -1) {
			if !seen[l[1]] {
				seen[l[1]] = true
				queue = append(queue, l[1])
			}
		}
	}
	for r := 1; r <= rounds; r++ {
		if roundRun[r] == "" {
			t.Errorf("web UI: round workflow %s not listed under any of the campaign's %d runs", pipeline.RoundWorkflowID(campaign, r), len(seen))
		}
	}
	if len(roundRun) != rounds {
		t.Errorf("web UI: the campaign's runs list %d round workflows, want %d", len(roundRun), rounds)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("web UI: the campaign's %d runs list all %d round workflows (%v)", len(seen), rounds, time.Since(t0).Round(time.Millisecond))

	// Each round's event history.
	for r := 1; r <= rounds; r++ {
		id := url.PathEscape(pipeline.RoundWorkflowID(campaign, r))
		page := fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", uiURL, ns, id, roundRun[r])
		var missing []string
		_, err := b.follow(ctx, page, uiPageWait, func(dom string) bool {
			if !strings.Contains(dom, ownTabs(id, roundRun[r])) {
				return false
			}
			text := pageText(dom)
			missing = missing[:0]
			for _, a := range roundActivities {
				if !strings.Contains(text, a) {
					missing = append(missing, a)
				}
			}
			return len(missing) == 0
		}, filepath.Join(out, fmt.Sprintf("round-%04d.png", r)))
		switch {
		case errors.Is(err, errNotReady) && len(missing) > 0:
			t.Errorf("web UI: round %d's history page does not show %q (%s)", r, missing, page)
		case err != nil:
			t.Fatalf("web UI: round %d: %v", r, err)
		}
	}
	if !t.Failed() {
		t.Logf("web UI: every round's history page shows %s, %s, %s and %s (screenshots round-NNNN.png in %s; %v in all)",
			pipeline.ActivityTrainLocal, pipeline.ActivityEvaluate, pipeline.ActivityAggregate, pipeline.ActivityCommitRound,
			out, time.Since(t0).Round(time.Millisecond))
	}
}

// figureCheck is put at the top of a copy of the page checkPage loads:
// once the page has loaded it reports every figure that did not decode as
// a console error, and records the counts in the DOM.
const figureCheck = `<script>
window.addEventListener("load", function () {
  var imgs = document.images, bad = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (!imgs[i].complete || imgs[i].naturalWidth === 0) { bad++; console.error("figure not loaded: " + imgs[i].alt); }
  }
  var d = document.createElement("div");
  d.id = "figure-check"; d.setAttribute("data-figures", imgs.length); d.setAttribute("data-broken", bad);
  document.body.appendChild(d);
});
</script>`

var figureCheckResult = regexp.MustCompile(`id="figure-check" data-figures="(\d+)" data-broken="(\d+)"`)

// pageCheck is what checkPage found in a page.
type pageCheck struct {
	console         []string // everything written to the console, figureCheck's reports included
	figures, broken int      // <img> elements, and those that did not decode
}

// checkPage opens the local HTML file path in headless Chromium, through
// a copy beside it (so that relative references resolve the same) with
// figureCheck at the top of its <head>, and writes a screenshot.
func checkPage(t *testing.T, ctx context.Context, path, screenshot string) pageCheck {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	withCheck := strings.Replace(string(page), "<head>", "<head>\n"+figureCheck, 1)
	if withCheck == string(page) {
		t.Fatalf("%s has no <head>", path)
	}
	check := strings.TrimSuffix(path, ".html") + "-check.html"
	if err := os.WriteFile(check, []byte(withCheck), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console := browse(t, ctx, "file://"+check, 5*time.Second, screenshot)
	m := figureCheckResult.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("%s: the figure check did not run; console: %q", path, console)
	}
	pc := pageCheck{console: console}
	pc.figures, _ = strconv.Atoi(m[1])
	pc.broken, _ = strconv.Atoi(m[2])
	return pc
}

// consoleControl is a page with the two faults checkPage must catch: a
// console error and a figure that does not load.
const consoleControl = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>console control</title></head>
<body>
<img src="no-such-figure.png" alt="the missing control figure">
<script>console.error("the control's console error");</script>
</body></html>
`

// TestReportInBrowser runs `starter experiment privacy` (tiny, on the
// local stack) and opens its report.html in headless Chromium: the page
// must write nothing to the console, and every figure must decode. A
// control page with a console error and a missing figure goes through the
// same check first, and must fail it on both counts: a check that sees
// nothing (Chromium's log format changed, the figure check no longer
// runs) would otherwise pass every page.
func TestReportInBrowser(t *testing.T) {
	deployTest(t)
	starterBin := bin(t, "starter")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	outDir := testOut(t)

	control := filepath.Join(tmp, "control.html")
	if err := os.WriteFile(control, []byte(consoleControl), 0o644); err != nil {
		t.Fatal(err)
	}
	pc := checkPage(t, ctx, control, filepath.Join(outDir, "control.png"))
	for i, want := range []string{"the control's console error", "figure not loaded: the missing control figure"} {
		if !anyContains(pc.console, want) {
			t.Errorf("case %d: the control page's console %q has no %q: the console check cannot see a page's messages", i, pc.console, want)
		}
	}
	if pc.figures != 1 || pc.broken != 1 {
		t.Errorf("the control page: %d figures, %d broken; want 1 and 1: the figure check cannot see a missing figure", pc.figures, pc.broken)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("control page: the check sees its console error and its missing figure")

	cmd := exec.CommandContext(ctx, starterBin, "experiment", "privacy", "--tiny", "--seeds", "1", "--rounds", "2",
		"--local", "--data-dir", filepath.Join(tmp, "stack"), "--out", filepath.Join(tmp, "report"), "--format", "json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("starter experiment: %v\n%s", err, out)
	}
	var res struct {
		Out string `json:"out"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("starter experiment output: %v\n%s", err, out)
	}
	report := filepath.Join(res.Out, "report.html")
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	nImg := strings.Count(string(page), "<img ")
	if nImg == 0 {
		t.Fatal("report.html has no figure")
	}
	pc = checkPage(t, ctx, report, filepath.Join(outDir, "report.png"))
	if len(pc.console) != 0 {
		t.Errorf("report.html wrote to the console: %q", pc.console)
	}
	if pc.figures != nImg || pc.broken != 0 {
		t.Errorf("figures: %d in the page (%d in report.html), %d did not load", pc.figures, nImg, pc.broken)
	}
	if !t.Failed() {
		t.Logf("report.html: %d figures, all decoded; no console message (screenshot %s)", pc.figures, filepath.Join(outDir, "report.png"))
	}
}

func anyContains(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
