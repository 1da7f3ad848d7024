package devstack

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/internal/portprobe"
	"github.com/ptopofl/ptopofl/store"
)

// TestTLSEveryPortWantsACertificate starts the stack with TLS in this
// process, finds every TCP port the process listens on from the kernel's
// tables (portprobe.Listening: its open sockets, not a list of what the
// stack should open), and probes each without a client certificate, over
// plain TCP and over TLS, with HTTP/1.1 and gRPC: none may answer. The
// positive controls show the probes can see service: the frontend, S3 and
// the Web UI answer the same probes made with the stack's certificate, a
// workflow started through the frontend reaches the history service (so
// the internode TLS works), and an object goes through S3. The history and
// matching ports refuse even the stack's certificate and a site's: only
// the in-memory internode certificate opens them.
func TestTLSEveryPortWantsACertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	tmp := t.TempDir()
	certs := filepath.Join(tmp, "certs")
	if err := MakeCerts(certs, []string{StarterCommonName, SiteCommonName("a")}, nil); err != nil {
		t.Fatal(err)
	}
	stackTLS := CertFiles(certs, StackCommonName)
	// Before anything listens: the process's own ports, so that only the
	// stack's are probed (a test binary opens none, but say so).
	before, err := portprobe.Listening(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A fixed frontend port: the history and matching services are on the
	// two after it.
	stack, err := Start(ctx, Config{Dir: filepath.Join(tmp, "stack"), TemporalPort: freePortRun(t, 4), TLS: &stackTLS, ReadyTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Stop()
	ep := stack.Endpoints()
	if !strings.HasPrefix(ep.UI, "https://") || !strings.HasPrefix(ep.S3URL, "https://") {
		t.Fatalf("with TLS the UI and S3 are https: %+v", ep)
	}

	after, err := portprobe.Listening(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ports := slices.DeleteFunc(after, func(p int) bool { return slices.Contains(before, p) })
	frontend, s3, ui := portOf(t, ep.Temporal), portOf(t, ep.S3URL), portOf(t, ep.UI)
	internal := []int{frontend + 1, frontend + 2} // history, matching: only to check the scan found them
	for _, p := range append([]int{frontend, s3, ui}, internal...) {
		if !slices.Contains(ports, p) {
			t.Fatalf("the scan found ports %v, not the stack's port %d: it cannot be trusted", ports, p)
		}
	}
	t.Logf("listening: %v (frontend %d, history %d, matching %d, S3 %d, UI %d)", ports, frontend, frontend+1, frontend+2, s3, ui)
	for _, p := range ports {
		for _, s := range portprobe.Probe(p, "/healthz") {
			if s.Service {
				t.Errorf("port %d served a client without a certificate (%s): %s", p, s.Probe, s.What)
			} else {
				t.Logf("port %d, %s: refused (%s)", p, s.Probe, s.What)
			}
		}
	}

	tc := func(name string) *tls.Config {
		c, err := CertFiles(certs, name).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	served := func(ss []portprobe.Served, probe string) bool {
		for _, s := range ss {
			if s.Probe == probe {
				return s.Service
			}
		}
		t.Fatalf("no probe %q", probe)
		return false
	}
	if !served(portprobe.ProbeWith(frontend, "/", tc(StackCommonName)), "grpc tls") {
		t.Error("the frontend did not answer the stack's certificate: the probe cannot see service")
	}
	for _, c := range []struct {
		port int
		name string
		ok   bool
	}{
		{s3, StackCommonName, true},
		{s3, SiteCommonName("a"), true}, // S3's keys decide what a site may do there
		{ui, StarterCommonName, true},
		{ui, SiteCommonName("a"), false},
	} {
		if got := served(portprobe.ProbeWith(c.port, "/healthz", tc(c.name)), "http/1.1 tls"); got != c.ok {
			t.Errorf("port %d with %s's certificate: served %v, want %v", c.port, c.name, got, c.ok)
		}
	}
	for _, p := range internal {
		for _, name := range []string{StackCommonName, SiteCommonName("a")} {
			for _, s := range portprobe.ProbeWith(p, "/", tc(name)) {
				if s.Service {
					t.Errorf("internal port %d served %s's certificate (%s): %s", p, name, s.Probe, s.What)
				}
			}
		}
	}

	// Through the frontend to history and matching: a workflow started
	// and described.
	c, err := client.Dial(client.Options{HostPort: ep.Temporal, Namespace: ep.Namespace, Logger: quietLogger{},
		ConnectionOptions: client.ConnectionOptions{TLS: tc(StarterCommonName)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "tls-check", TaskQueue: "nobody-polls"}, "NoSuchWorkflow"); err != nil {
		t.Fatalf("start a workflow over TLS: %v", err)
	}
	if _, err := c.DescribeWorkflowExecution(ctx, "tls-check", ""); err != nil {
		t.Fatalf("describe it: %v", err)
	}
	// Through the S3 front: an object put and read back with the stack's
	// certificate, and nothing without one.
	st, err := store.New(stack.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("through the mutual-TLS front")
	ref, err := st.Put(ctx, "probe/object", body)
	if err != nil {
		t.Fatalf("put over mutual TLS: %v", err)
	}
	got, err := st.Get(ctx, ref)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("get over mutual TLS: %q, %v", got, err)
	}
	cfg := stack.StoreConfig("")
	cfg.ClientCertFile, cfg.ClientKeyFile = "", ""
	noCert, err := store.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noCert.Get(ctx, ref); err == nil {
		t.Error("S3 answered a client with the root keys but no certificate")
	}
}

// portOf is the port of a host:port or a URL.
func portOf(t *testing.T, s string) int {
	t.Helper()
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Host
	}
	i := strings.LastIndex(s, ":")
	p, err := strconv.Atoi(s[i+1:])
	if err != nil {
		t.Fatalf("port of %q: %v", s, err)
	}
	return p
}
