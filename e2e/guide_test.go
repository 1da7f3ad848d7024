package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/internal/portprobe"
	"github.com/ptopofl/ptopofl/pipeline"
)

// The walk-through of docs/how-to/deploy.md as a test: its command blocks,
// taken from the page itself, run in order as the parties it names.
//
// A block the walk-through runs is a ```sh fence right after a line
//
//	<!-- deploy PARTY [background="TEXT"] [id=NAME] -->
//
// PARTY is "coordinator", a site's name, or "site": once for each site,
// the block being written for hospital-a with its part of the synthetic
// federation, site0 (hospital-b gets site1, hospital-c site2). A
// background block starts a server ("… &" on its last command line): it
// runs until the test ends, and the next block runs once its output holds
// TEXT. id names a block the test does something around (see
// TestDeployGuide).
type guideBlock struct {
	line       int // of the marker, 1-based
	party      string
	background string
	id         string
	script     string
}

var (
	guideMarker = regexp.MustCompile(`^<!-- deploy (\S+)((?: [a-z]+=(?:"[^"]*"|\S+))*) -->$`)
	guideAttr   = regexp.MustCompile(`([a-z]+)=("[^"]*"|\S+)`)
)

// parseGuide returns the walk-through's blocks of a Markdown page.
func parseGuide(text string) ([]guideBlock, error) {
	var blocks []guideBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "<!-- deploy") {
			continue
		}
		m := guideMarker.FindStringSubmatch(l)
		if m == nil {
			return nil, fmt.Errorf("line %d: malformed marker %q", i+1, l)
		}
		b := guideBlock{line: i + 1, party: m[1]}
		for _, a := range guideAttr.FindAllStringSubmatch(m[2], -1) {
			v := strings.Trim(a[2], `"`)
			switch a[1] {
			case "background":
				b.background = v
			case "id":
				b.id = v
			default:
				return nil, fmt.Errorf("line %d: unknown attribute %q", i+1, a[1])
			}
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return nil, fmt.Errorf("line %d: the marker must be followed by a ```sh fence", i+1)
		}
		j := i + 2
		var body []string
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			body = append(body, lines[j])
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: unclosed block", i+2)
		}
		b.script = strings.Join(body, "\n") + "\n"
		if b.background != "" {
			s, ok := foreground(b.script)
			if !ok {
				return nil, fmt.Errorf("line %d: a background block must end with a command followed by &", i+1)
			}
			b.script = s
		}
		blocks = append(blocks, b)
		i = j
	}
	return blocks, nil
}

// foreground is a background block without its final "&" (and the comment
// lines after it): the test runs the command itself and keeps it.
func foreground(script string) (string, bool) {
	lines := strings.Split(strings.TrimRight(script, "\n"), "\n")
	for len(lines) > 0 && (strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "#") || strings.TrimSpace(lines[len(lines)-1]) == "") {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return "", false
	}
	last := strings.TrimRight(lines[len(lines)-1], " ")
	cmd, ok := strings.CutSuffix(last, "&")
	if !ok {
		return "", false
	}
	lines[len(lines)-1] = strings.TrimRight(cmd, " ")
	return strings.Join(lines, "\n") + "\n", true
}

// TestParseGuide: the markers' grammar, and the page's own blocks.
func TestParseGuide(t *testing.T) {
	page := "x\n<!-- deploy coordinator background=\"ready in\" id=stack -->\n```sh\n$R/bin/devstack --data /srv/x &\n# {\"a\":1}\n```\n" +
		"<!-- deploy site -->\n```sh\necho hospital-a\n```\n"
	blocks, err := parseGuide(page)
	if err != nil {
		t.Fatal(err)
	}
	want := []guideBlock{
		{line: 2, party: "coordinator", background: "ready in", id: "stack", script: "$R/bin/devstack --data /srv/x\n"},
		{line: 7, party: "site", script: "echo hospital-a\n"},
	}
	if len(blocks) != len(want) {
		t.Fatalf("%d blocks, want %d", len(blocks), len(want))
	}
	for i := range want {
		if blocks[i] != want[i] {
			t.Errorf("block %d: %+v, want %+v", i, blocks[i], want[i])
		}
	}
	for i, bad := range []string{
		0: "<!-- deploy coordinator -->\n```\nx\n```\n",
		1: "<!-- deploy coordinator background=\"x\" -->\n```sh\nno ampersand\n```\n",
		2: "<!-- deploy coordinator colour=red -->\n```sh\nx\n```\n",
		3: "<!-- deploy coordinator -->\n```sh\nx\n",
	} {
		if _, err := parseGuide(bad); err == nil {
			t.Errorf("bad case %d parsed", i)
		}
	}
	text, err := os.ReadFile("../docs/how-to/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err = parseGuide(string(text))
	if err != nil {
		t.Fatalf("deploy.md: %v", err)
	}
	ids := map[string]bool{}
	for _, b := range blocks {
		ids[b.id] = true
	}
	for _, id := range []string{"long-run", "status", "status-json", "restart"} {
		if !ids[id] {
			t.Errorf("deploy.md has no block with id=%s, which TestDeployGuide acts around", id)
		}
	}
}

// guideSites are the sites of the walk-through, in the order of their part
// of the synthetic federation (site0, site1, site2).
var guideSites = []string{"hospital-a", "hospital-b", "hospital-c"}

// guideRig runs the walk-through's blocks.
type guideRig struct {
	t     *testing.T
	ctx   context.Context
	root  string            // stands for "/": the page's /srv is root/srv
	repo  string            // $R: its bin holds this checkout's commands
	logs  string            // each block's output
	subst *strings.Replacer // the page's paths and ports → the test's
	uid   map[string]int    // a site's account (when the test runs as root)
	// procs are the background blocks' processes, by party and block;
	// latest is each party's last one (a site's worker).
	procs  map[guideProc]*exec.Cmd
	done   map[guideProc]chan struct{}
	latest map[string]guideProc
	runs   int
}

// guideProc names a background block's process: its party and the line of
// its block.
type guideProc struct {
	party string
	line  int
}

// home is where a party's commands run: the coordinator's directory, or
// the site's (on its own machine, owned by its account).
func (g *guideRig) home(party string) string {
	if party == "coordinator" {
		return filepath.Join(g.root, "srv")
	}
	return filepath.Join(g.root, "srv", party)
}

// command is script run as party by sh under env -i: no variable but HOME,
// PATH and R (the clone) from the test's environment; its own process
// group, under the site's own account when the test is root.
func (g *guideRig) command(party, script string) *exec.Cmd {
	cmd := exec.Command("/usr/bin/env", "-i", "HOME="+g.home(party), "PATH=/usr/local/bin:/usr/bin:/bin", "R="+g.repo, "LC_ALL=C.UTF-8",
		"/bin/sh", "-ec", script)
	cmd.Dir = g.home(party)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if uid, ok := g.uid[party]; ok {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), NoSetGroups: true}
	}
	return cmd
}

// script is a block's text for party, with the test's paths and ports, and
// for a "site" block the site's name and part.
func (g *guideRig) script(b guideBlock, party string) string {
	s := g.subst.Replace(b.script)
	if b.party == "site" {
		s = strings.NewReplacer("hospital-a", party, "site0", fmt.Sprintf("site%d", slices.Index(guideSites, party))).Replace(s)
	}
	return s
}

// run runs block b as party in the foreground and returns its standard
// output; a failure ends the test with its output.
func (g *guideRig) run(b guideBlock, party string) string {
	g.t.Helper()
	g.runs++
	logPath := filepath.Join(g.logs, fmt.Sprintf("%02d-%s-line%d.log", g.runs, party, b.line))
	ctx, cancel := context.WithTimeout(g.ctx, 4*time.Minute)
	defer cancel()
	cmd := g.command(party, g.script(b, party))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		g.t.Fatalf("deploy.md:%d (%s): %v", b.line, party, err)
	}
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	stop()
	os.WriteFile(logPath, append(out.Bytes(), errb.Bytes()...), 0o644)
	if err != nil {
		g.t.Fatalf("deploy.md:%d (%s): %v\n--- stdout\n%s\n--- stderr\n%s", b.line, party, err, tail(out.String(), 3000), tail(errb.String(), 3000))
	}
	return out.String()
}

// start runs background block b as party and returns once its output holds
// the block's ready text; the process group is killed when the test ends.
func (g *guideRig) start(b guideBlock, party string) {
	g.t.Helper()
	g.runs++
	logPath := filepath.Join(g.logs, fmt.Sprintf("%02d-%s-line%d.log", g.runs, party, b.line))
	lf, err := os.Create(logPath)
	if err != nil {
		g.t.Fatal(err)
	}
	cmd := g.command(party, g.script(b, party))
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		g.t.Fatalf("deploy.md:%d (%s): %v", b.line, party, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); lf.Close(); close(done) }()
	g.t.Cleanup(func() { killGroup(cmd, done, syscall.SIGTERM) })
	id := guideProc{party, b.line}
	g.procs[id], g.done[id], g.latest[party] = cmd, done, id
	waitFor(g.t, g.ctx, fmt.Sprintf("deploy.md:%d (%s) to print %q", b.line, party, b.background), func() bool {
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			g.t.Fatalf("deploy.md:%d (%s) exited before it was ready:\n%s", b.line, party, tail(string(log), 3000))
		default:
		}
		log, _ := os.ReadFile(logPath)
		return bytes.Contains(log, []byte(b.background))
	})
}

// killGroup signals cmd's process group and waits for cmd, escalating to
// SIGKILL after 20 s.
func killGroup(cmd *exec.Cmd, done chan struct{}, sig syscall.Signal) {
	select {
	case <-done:
		return
	default:
	}
	syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// TestDeployGuide follows docs/how-to/deploy.md from its own command
// blocks: certificates, PostgreSQL, the stack, the sites' S3 identities,
// each party's coordinator.env and each site's bundle, sent (the test
// copies each site's tar to the site, standing for the channel the page
// leaves to the reader) and unpacked by the site, the sites' data, the
// server worker, three site workers, a campaign verified; then a longer
// campaign during which it kills hospital-b's worker with SIGKILL after
// round 2, checks that `starter status --format json` names hospital-b
// among the sites the round awaits, restarts it with the page's command
// and sees the campaign finish and verify. Every party runs under env -i
// with only the paths the page gives it; as root, each site runs under an
// account of its own, which cannot read the coordinator's files.
//
// Then it checks what the page promises: no password, key or secret in any
// process's command line (all of /proc) or in the parties' environments,
// and every file under the page's directories that holds one readable by
// its owner only, none in the parties' output; no TCP port of the
// coordinator's processes serves a client without a certificate (found
// from their sockets, probed over plain TCP and TLS, HTTP and gRPC), and
// the sites listen on none; and a site worker given another site's
// certificate exits non-zero within 30 s, naming the certificate, the
// queue and the refusal.
func TestDeployGuide(t *testing.T) {
	deployTest(t)
	for _, name := range []string{"devstack", "worker", "starter", "gendata"} {
		bin(t, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	text, err := os.ReadFile("../docs/how-to/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseGuide(string(text))
	if err != nil {
		t.Fatalf("deploy.md: %v", err)
	}

	// The directories stand for the machines' /: searchable by every
	// account (PostgreSQL's, the sites'), as / is.
	root, err := os.MkdirTemp("", "ptopofl-guide-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	g := &guideRig{t: t, ctx: ctx, root: root, repo: filepath.Join(root, "repo"), logs: filepath.Join(root, "logs"),
		uid: map[string]int{}, procs: map[guideProc]*exec.Cmd{}, done: map[guideProc]chan struct{}{}, latest: map[string]guideProc{}}
	for _, d := range []string{root, g.repo, filepath.Join(root, "srv")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
	}
	os.Mkdir(g.logs, 0o700)
	// $R/bin: this checkout's commands, as make build leaves them.
	binDirOf := filepath.Dir(bin(t, "worker"))
	os.Chmod(binDirOf, 0o755)
	if err := os.Symlink(binDirOf, filepath.Join(g.repo, "bin")); err != nil {
		t.Fatal(err)
	}
	asRoot := os.Geteuid() == 0
	for i, site := range guideSites {
		home := g.home(site)
		if err := os.Mkdir(home, 0o700); err != nil {
			t.Fatal(err)
		}
		if asRoot {
			g.uid[site] = 61000 + i
			if err := os.Chown(home, g.uid[site], g.uid[site]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !asRoot {
		t.Log("not root: the sites run under the test's own account (as root each gets its own)")
	}
	tport, s3port, uiport, pgport := freeRun(t, 4), freeRun(t, 1), freeRun(t, 1), freeRun(t, 1)
	g.subst = strings.NewReplacer("/srv/", filepath.Join(root, "srv")+"/",
		"17233", strconv.Itoa(tport), "19000", strconv.Itoa(s3port), "18233", strconv.Itoa(uiport), "55432", strconv.Itoa(pgport))
	dumpLogsOnFailure(t, g.logs)

	coord := filepath.Join(root, "srv", "ptopofl")
	starter := func(args ...string) ([]byte, error) {
		// The coordinator's status, as the page has the operator ask it.
		b := guideBlock{line: 0, script: "( set -a; . /srv/ptopofl/coordinator.env; set +a\n  exec $R/bin/starter " + strings.Join(args, " ") + " )\n"}
		cmd := g.command("coordinator", g.script(b, "coordinator"))
		return cmd.Output()
	}
	sent := false
	t0 := time.Now()
	for _, b := range blocks {
		parties := []string{b.party}
		if b.party == "site" {
			parties = guideSites
		}
		if b.party != "coordinator" && !sent {
			g.sendBundles(coord)
			sent = true
		}
		for _, party := range parties {
			switch {
			case b.id == "restart":
				// hospital-b's worker was killed (id=long-run); the same
				// command starts it again.
			case b.id == "status-json":
				g.awaits(b, party, "hospital-b")
				continue
			}
			if b.background != "" {
				g.start(b, party)
				continue
			}
			out := g.run(b, party)
			t.Logf("deploy.md:%d (%s) done at %v", b.line, party, time.Since(t0).Round(time.Millisecond))
			if strings.Contains(b.script, "starter run /srv/ptopofl/try-consortium.yaml") {
				if !regexp.MustCompile(`(?m)^flagged +.*hospital-b`).MatchString(out) {
					t.Errorf("the first campaign did not flag the label-flipping hospital-b:\n%s", tail(out, 2000))
				}
			}
			if b.id == "status" {
				t.Logf("starter status while hospital-b is down:\n%s", out)
			}
			if b.id == "long-run" {
				g.crashSite(starter, "hospital-b", 2)
			}
		}
	}
	t.Logf("walk-through done in %v", time.Since(t0).Round(time.Millisecond))

	g.wrongCertificate(coord)
	g.checkSecrets(coord)
	g.checkPorts(coord, tport, s3port, uiport, pgport)
}

// sendBundles carries each site's bundle from the coordinator to the site
// (scp, in the page's words): the tar file the coordinator made, into the
// site's directory, owned by the site's account.
func (g *guideRig) sendBundles(coord string) {
	g.t.Helper()
	for _, site := range guideSites {
		b, err := os.ReadFile(filepath.Join(coord, "handover", site+".tar"))
		if err != nil {
			g.t.Fatalf("the coordinator made no bundle for %s: %v", site, err)
		}
		dst := filepath.Join(g.home(site), site+".tar")
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			g.t.Fatal(err)
		}
		if uid, ok := g.uid[site]; ok {
			os.Chown(dst, uid, uid)
		}
	}
}

// crashSite waits until the campaign long-run has committed after rounds,
// then kills site's worker (its whole process group) with SIGKILL.
func (g *guideRig) crashSite(starter func(...string) ([]byte, error), site string, after int) {
	g.t.Helper()
	waitFor(g.t, g.ctx, fmt.Sprintf("long-run to commit round %d", after), func() bool {
		out, err := starter("status", "long-run", "--format", "json")
		var st pipeline.CampaignStatus
		return err == nil && json.Unmarshal(out, &st) == nil && st.RoundsDone >= after
	})
	id := g.latest[site]
	cmd := g.procs[id]
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		g.t.Fatalf("kill -9 %s's worker: %v", site, err)
	}
	<-g.done[id]
	g.t.Logf("killed %s's worker (kill -9, pid %d)", site, cmd.Process.Pid)
}

// awaits runs the status block b until its JSON names site among the sites
// the running round awaits (within a minute: a site killed between two
// phases is awaited from the next).
func (g *guideRig) awaits(b guideBlock, party, site string) {
	g.t.Helper()
	var last string
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out := g.run(b, party)
		last = out
		var st pipeline.CampaignStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			g.t.Fatalf("deploy.md:%d: not a JSON status: %v\n%s", b.line, err, out)
		}
		if st.Round != nil && slices.Contains(st.Round.Awaited, site) {
			if st.Round.DeadlineInSeconds <= 0 || st.Round.Deadline.IsZero() {
				g.t.Errorf("the awaited round names no deadline: %s", out)
			}
			g.t.Logf("status names %s awaited: %s", site, strings.TrimSpace(out))
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	g.t.Fatalf("starter status --format json never named %s among the awaited sites; last:\n%s", site, last)
}

// wrongCertificate starts hospital-a's worker with hospital-b's
// certificate (the coordinator's copies): it must exit non-zero within
// 30 s, its last line naming the certificate, the queue and the refusal.
func (g *guideRig) wrongCertificate(coord string) {
	g.t.Helper()
	secrets := g.t.TempDir()
	script := g.subst.Replace("( set -a; . /srv/ptopofl/handover/hospital-a/coordinator.env; set +a\n" +
		"  exec $R/bin/worker --role site --site hospital-a --data /srv/hospital-a/data --secret-dir " + secrets +
		" --s3-credentials-file /srv/ptopofl/handover/hospital-a/s3.env --temporal-tls-ca /srv/ptopofl/certs/ca.pem --s3-tls-ca /srv/ptopofl/certs/ca.pem" +
		" --payload-key-file /srv/ptopofl/stack/payload-keys" +
		" --temporal-tls-cert /srv/ptopofl/certs/ptopofl-site-hospital-b.pem --temporal-tls-key /srv/ptopofl/certs/ptopofl-site-hospital-b-key.pem )\n")
	ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
	defer cancel()
	cmd := g.command("coordinator", script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	stop()
	took := time.Since(t0)
	last := lastLine(out.Bytes())
	switch {
	case ctx.Err() != nil:
		g.t.Errorf("a worker with another site's certificate was still running after 30 s:\n%s", tail(out.String(), 2000))
	case err == nil:
		g.t.Errorf("a worker with another site's certificate exited 0:\n%s", tail(out.String(), 2000))
	default:
		for _, want := range []string{"ptopofl-site-hospital-b", "task queue ptopofl-site-hospital-a", "Request unauthorized"} {
			if !strings.Contains(last, want) {
				g.t.Errorf("its last line does not name %q: %s", want, last)
			}
		}
		g.t.Logf("a worker with hospital-b's certificate for hospital-a exited (%v) after %v: %s", err, took.Round(time.Millisecond), last)
	}
}

// guideSecrets are the secret values of the walk-through, by what they
// are: the database password, the S3 secret keys, the payload key, the
// private keys (their first line of base64) and the sites' DP secrets.
func (g *guideRig) guideSecrets(coord string) map[string]string {
	g.t.Helper()
	s := map[string]string{}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			g.t.Fatalf("read a secret the walk-through made: %v", err)
		}
		return string(b)
	}
	s["postgres password"] = strings.TrimSpace(read(filepath.Join(coord, "pg", "password")))
	envSecret := func(path string) string {
		for _, l := range strings.Split(read(path), "\n") {
			if v, ok := strings.CutPrefix(l, "PTOPOFL_S3_SECRET_KEY="); ok {
				return v
			}
		}
		g.t.Fatalf("%s holds no secret key", path)
		return ""
	}
	s["S3 root secret key"] = envSecret(filepath.Join(coord, "stack", "credentials.env"))
	for _, site := range guideSites {
		s[site+" S3 secret key"] = envSecret(filepath.Join(coord, "stack", "sites", site+".env"))
		lines := strings.Split(read(filepath.Join(g.home(site), "secret", site+".secret")), "\n")
		if len(lines) < 2 {
			g.t.Fatalf("%s's DP secret: unexpected format", site)
		}
		if _, err := hex.DecodeString(strings.TrimSpace(lines[1])); err != nil {
			g.t.Fatalf("%s's DP secret: %v", site, err)
		}
		s[site+" DP secret"] = strings.TrimSpace(lines[1])
	}
	for _, l := range strings.Split(read(filepath.Join(coord, "stack", "payload-keys")), "\n") {
		if _, key, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && !strings.HasPrefix(l, "#") {
			s["payload key"] = key
		}
	}
	keys, _ := filepath.Glob(filepath.Join(coord, "certs", "*-key.pem"))
	for _, k := range keys {
		lines := strings.Split(read(k), "\n")
		if len(lines) < 2 || len(lines[1]) < 32 {
			g.t.Fatalf("%s: not a PEM key", k)
		}
		s["private key "+filepath.Base(k)] = lines[1]
	}
	for what, v := range s {
		if len(v) < 16 {
			g.t.Fatalf("%s: %q is too short to search for", what, v)
		}
	}
	return s
}

// checkSecrets: no secret in any command line or party environment; every
// file holding one (or a PEM private key) readable by its owner only; none
// in the parties' output.
func (g *guideRig) checkSecrets(coord string) {
	g.t.Helper()
	secrets := g.guideSecrets(coord)
	holds := func(b []byte) string {
		for what, v := range secrets {
			if bytes.Contains(b, []byte(v)) {
				return what
			}
		}
		return ""
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	scanned := 0
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		scanned++
		if what := holds(cmdline); what != "" {
			g.t.Errorf("%s's command line holds the %s: %q", p, what, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	mine := g.partyPIDs()
	for pid := range mine {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		if what := holds(env); what != "" {
			g.t.Errorf("process %d's environment holds the %s", pid, what)
		}
	}
	g.t.Logf("no secret in the command lines of %d processes nor in the environments of the parties' %d", scanned, len(mine))

	var secretFiles []string
	filepath.WalkDir(filepath.Join(g.root, "srv"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Size() > 64<<20 {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		what := holds(b)
		if what == "" && bytes.Contains(b, []byte("PRIVATE KEY-----")) {
			what = "a private key"
		}
		if what == "" {
			return nil
		}
		rel, _ := filepath.Rel(g.root, path)
		secretFiles = append(secretFiles, fmt.Sprintf("/%s %04o", rel, fi.Mode().Perm()))
		if fi.Mode().Perm()&0o077 != 0 {
			g.t.Errorf("/%s holds the %s and has mode %04o: others may read it", rel, what, fi.Mode().Perm())
		}
		return nil
	})
	g.t.Logf("%d files hold a secret, each readable by its owner only:\n%s", len(secretFiles), strings.Join(secretFiles, "\n"))
	logs, _ := os.ReadDir(g.logs)
	for _, l := range logs {
		b, _ := os.ReadFile(filepath.Join(g.logs, l.Name()))
		if what := holds(b); what != "" {
			g.t.Errorf("the output of %s holds the %s", l.Name(), what)
		}
	}
}

// partyPIDs are the processes of the parties' background blocks, by
// party: every member of their process groups and every descendant (a
// PostgreSQL server runs in a process group of its own).
func (g *guideRig) partyPIDs() map[int]string {
	party := map[int]string{}
	for id, cmd := range g.procs {
		party[cmd.Process.Pid] = id.party
	}
	type info struct{ ppid, pgrp int }
	all := map[int]info{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces; the fields
		// after its closing parenthesis.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		all[pid] = info{ppid, pgrp}
	}
	out := map[int]string{}
	for pid, in := range all {
		if name, ok := party[in.pgrp]; ok {
			out[pid] = name
		}
	}
	for grew := true; grew; {
		grew = false
		for pid, in := range all {
			if _, ok := out[pid]; ok {
				continue
			}
			if name, ok := out[in.ppid]; ok {
				out[pid], grew = name, true
			}
		}
	}
	return out
}

// checkPorts probes every TCP port the coordinator's processes listen on
// (from their sockets: PostgreSQL's, the devstack's, the server worker's,
// which should be none) as a client without a certificate, and checks the
// sites' workers listen on none.
func (g *guideRig) checkPorts(coord string, tport, s3port, uiport, pgport int) {
	g.t.Helper()
	var ports []int
	owner := map[int]string{}
	for pid, party := range g.partyPIDs() {
		ps, err := portprobe.Listening(pid)
		if err != nil {
			continue // exited meanwhile
		}
		if party != "coordinator" && len(ps) > 0 {
			g.t.Errorf("%s's process %d listens on %v: nothing should connect to a site", party, pid, ps)
		}
		for _, p := range ps {
			if !slices.Contains(ports, p) {
				ports = append(ports, p)
				owner[p] = fmt.Sprintf("pid %d (%s)", pid, comm(pid))
			}
		}
	}
	slices.Sort(ports)
	for _, p := range []int{tport, tport + 1, tport + 2, s3port, uiport, pgport} {
		if !slices.Contains(ports, p) {
			g.t.Fatalf("the coordinator's processes listen on %v, not on %d: the scan cannot be trusted", ports, p)
		}
	}
	for _, p := range ports {
		for _, s := range portprobe.Probe(p, "/healthz") {
			if s.Service {
				g.t.Errorf("port %d of %s served a client without a certificate (%s): %s", p, owner[p], s.Probe, s.What)
			}
		}
		g.t.Logf("port %d (%s): nothing served without a certificate", p, owner[p])
	}
	// The positive control: the same probe with the starter's certificate
	// gets the frontend's health answer, and the Web UI's page.
	tc, err := tlsClient(filepath.Join(coord, "certs", "ca.pem"), filepath.Join(coord, "certs", "ptopofl-starter.pem"), filepath.Join(coord, "certs", "ptopofl-starter-key.pem"))
	if err != nil {
		g.t.Fatal(err)
	}
	for _, s := range portprobe.ProbeWith(tport, "/", tc) {
		if s.Probe == "grpc tls" && !s.Service {
			g.t.Errorf("the frontend did not answer the starter's certificate either (%s): the probes cannot see service", s.What)
		}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/", uiport))
	if err != nil {
		g.t.Errorf("the Web UI with the starter's certificate: %v", err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			g.t.Errorf("the Web UI with the starter's certificate: %s", resp.Status)
		}
	}
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
