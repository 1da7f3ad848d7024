package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/internal/devstack"
)

// TestWebUIEndpoint runs the built binary twice over one data directory.
// With the Web UI (the default) the URL it prints and records in
// endpoints.json is http://127.0.0.1:PORT, which answers 200 (health path
// and the workflows page scripts/run.sh prints), and the port answers at
// none of the machine's other addresses: the UI has no login, so loopback
// only. With --ui=false no UI is recorded and nothing listens on the port.
//
// scripts/run.sh (make run) prints the "ui" field of endpoints.json with
// /namespaces/default/workflows appended, so the URL checked here is the
// one it prints.
func TestWebUIEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the devstack binary")
	}
	bin := devstackBinary(t)
	dir := filepath.Join(t.TempDir(), "stack")
	uiPort := freePortRun(t, 1)
	args := []string{"--data", dir, "--temporal-port", strconv.Itoa(freePortRun(t, 4)), "--s3-port", strconv.Itoa(freePortRun(t, 1)),
		"--ui-port", strconv.Itoa(uiPort)}
	recorded := func() (devstack.Endpoints, []byte) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, devstack.EndpointsFile))
		var ep devstack.Endpoints
		if err != nil || json.Unmarshal(b, &ep) != nil {
			t.Fatalf("%s: %s (%v)", devstack.EndpointsFile, b, err)
		}
		return ep, b
	}
	hc := &http.Client{Timeout: 10 * time.Second}

	cmd, ep, took := startDevstack(t, bin, args)
	t.Logf("with the UI: ready in %v, UI at %s", took, ep.UI)
	want := "http://127.0.0.1:" + strconv.Itoa(uiPort)
	if onDisk, _ := recorded(); ep.UI != want || onDisk.UI != want {
		t.Fatalf("UI printed as %q, recorded as %q; want %q", ep.UI, onDisk.UI, want)
	}
	for _, path := range []string{"/healthz", "/namespaces/" + ep.Namespace + "/workflows"} {
		resp, err := hc.Get(ep.UI + path)
		if err != nil {
			t.Fatalf("GET %s: %v", ep.UI+path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s, want 200", ep.UI+path, resp.Status)
		}
	}
	others := 0
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue // link-local IPv6 needs a zone to dial
		}
		others++
		addr := net.JoinHostPort(ipn.IP.String(), strconv.Itoa(uiPort))
		if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			c.Close()
			t.Errorf("the web UI port answers on %s: it must listen on 127.0.0.1 only", addr)
		}
	}
	t.Logf("the UI port is closed at the machine's %d other addresses", others)
	stopDevstack(t, cmd)

	cmd, ep, _ = startDevstack(t, bin, append(args, "--ui=false"))
	onDisk, raw := recorded()
	if ep.UI != "" || onDisk.UI != "" || strings.Contains(string(raw), `"ui"`) {
		t.Errorf("--ui=false: UI printed as %q, endpoints.json %s", ep.UI, raw)
	}
	if ep.Temporal == "" || ep.S3URL == "" {
		t.Errorf("--ui=false: endpoints %+v, want Temporal and S3 still served", ep)
	}
	if resp, err := hc.Get(want + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("--ui=false: %s answers %s", want, resp.Status)
	}
	stopDevstack(t, cmd)
}

// stopDevstack sends SIGTERM and expects exit status 0 within 60 s.
func stopDevstack(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0", err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Error("no exit within 60s of SIGTERM")
	}
}
