package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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
// of the page's console.
var consoleLine = regexp.MustCompile(`:CONSOLE:\d+\] (.*)`)

// browse loads url in headless Chromium, lets the page run for budget of
// virtual time (an SPA fetches and renders in it), and returns the DOM
// then, and the messages the page wrote to its console. With screenshot
// set it also writes a PNG of the page there.
func browse(t *testing.T, ctx context.Context, url string, budget time.Duration, screenshot string) (dom string, console []string) {
	t.Helper()
	chromium := chromiumBin(t)
	run := func(extra ...string) ([]byte, []byte) {
		profile := t.TempDir() // a profile of its own: no lock shared between runs
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
			"--enable-logging=stderr", "--v=0", "--window-size=1600,1000",
			"--virtual-time-budget=" + strconv.Itoa(int(budget.Milliseconds()))}, extra...)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, chromium, append(args, url)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %s: %v\n%s", url, err, tail(stderr.String(), 2000))
		}
		return out, []byte(stderr.String())
	}
	out, stderr := run("--dump-dom")
	for _, m := range consoleLine.FindAllStringSubmatch(string(stderr), -1) {
		console = append(console, m[1])
	}
	if screenshot != "" {
		run("--screenshot=" + screenshot)
		if fi, err := os.Stat(screenshot); err != nil || fi.Size() == 0 {
			t.Fatalf("screenshot %s: %v", screenshot, err)
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

// checkWebUI opens the devstack's Temporal Web UI in headless Chromium:
// the workflow list must name every round workflow of campaign (rounds
// 1..rounds), and the last round's page must list its activities. It
// writes a screenshot of each page to out.
func checkWebUI(t *testing.T, ctx context.Context, uiURL, campaign string, rounds int, out string) {
	t.Helper()
	// The list of round workflows, newest first, all on one page.
	query := "WorkflowType=\"RoundWorkflow\""
	list := uiURL + "/namespaces/default/workflows?query=" + strings.ReplaceAll(strings.ReplaceAll(query, "=", "%3D"), "\"", "%22") + "&per-page=100"
	dom, console := browse(t, ctx, list, 20*time.Second, filepath.Join(out, "workflows.png"))
	var runID string
	for r := 1; r <= rounds; r++ {
		id := fmt.Sprintf("%s%%2Fround-%04d", campaign, r)
		m := regexp.MustCompile(`/workflows/` + regexp.QuoteMeta(id) + `/([0-9a-f-]{36})`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("web UI: round workflow %s/round-%04d not in the workflow list (%s); console: %q", campaign, r, list, console)
		}
		if r == rounds {
			runID = m[1]
		}
	}
	t.Logf("web UI: the workflow list names all %d round workflows (screenshot %s)", rounds, filepath.Join(out, "workflows.png"))

	// The last round's event history lists its activities.
	page := fmt.Sprintf("%s/namespaces/default/workflows/%s%%2Fround-%04d/%s/history", uiURL, campaign, rounds, runID)
	dom, console = browse(t, ctx, page, 20*time.Second, filepath.Join(out, "round.png"))
	text := html.UnescapeString(dom)
	for i, act := range []string{"TrainLocal", "Evaluate", "Aggregate", "CommitRound"} {
		if !strings.Contains(text, act) {
			t.Errorf("case %d: web UI page of round %d does not list activity %s (%s); console: %q", i, rounds, act, page, console)
		}
	}
	if !t.Failed() {
		t.Logf("web UI: round %d's page lists TrainLocal, Evaluate, Aggregate and CommitRound (screenshot %s)", rounds, filepath.Join(out, "round.png"))
	}
}

// figureCheck is put at the top of a copy of report.html: once the page
// has loaded it reports every figure that did not decode as a console
// error, and records the count in the DOM.
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

// TestReportInBrowser runs `starter experiment privacy` (tiny, on the
// local stack) and opens its report.html in headless Chromium: the page
// must write nothing to the console, and every figure must decode.
func TestReportInBrowser(t *testing.T) {
	deployTest(t)
	starterBin := bin(t, "starter")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tmp := t.TempDir()
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
	page, err := os.ReadFile(filepath.Join(res.Out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	nImg := strings.Count(string(page), "<img ")
	if nImg == 0 {
		t.Fatal("report.html has no figure")
	}
	// The checking copy next to the original, so that any relative
	// reference resolves the same.
	check := filepath.Join(res.Out, "report-check.html")
	withCheck := strings.Replace(string(page), "<head>", "<head>\n"+figureCheck, 1)
	if withCheck == string(page) {
		t.Fatal("report.html has no <head>")
	}
	if err := os.WriteFile(check, []byte(withCheck), 0o644); err != nil {
		t.Fatal(err)
	}
	// The original, for the console and the screenshot; the copy for the
	// figures.
	outDir := testOut(t)
	_, console := browse(t, ctx, "file://"+filepath.Join(res.Out, "report.html"), 5*time.Second, filepath.Join(outDir, "report.png"))
	if len(console) != 0 {
		t.Errorf("report.html wrote to the console: %q", console)
	}
	dom, console := browse(t, ctx, "file://"+check, 5*time.Second, "")
	m := figureCheckResult.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the figure check did not run; console: %q", console)
	}
	if m[1] != strconv.Itoa(nImg) || m[2] != "0" {
		t.Errorf("figures: %s in the page (%d in report.html), %s did not load; console: %q", m[1], nImg, m[2], console)
	}
	t.Logf("report.html: %s figures, all decoded; no console message (screenshot %s)", m[1], filepath.Join(outDir, "report.png"))
}
