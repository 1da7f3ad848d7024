package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
)

// Config configures a console Server.
type Config struct {
	// Service reads the stack: Temporal's workflows and the bucket.
	Service *campaign.Service
	// WebUI is the Temporal Web UI's address (http://HOST:PORT), for
	// links to a campaign's workflow; "" leaves them out. Namespace is the
	// namespace its links open.
	WebUI     string
	Namespace string
	// Refresh is how often an open page of something running asks for
	// news; zero means DefaultRefresh.
	Refresh time.Duration
	// ErrorLog receives the errors that answered 500 (the page says only
	// that something failed); nil discards them.
	ErrorLog io.Writer
	// Loopback makes the server answer only requests whose Host is a
	// loopback name (127.0.0.1, [::1], localhost, any port), so that a web
	// page elsewhere cannot read it through a DNS name that resolves to
	// this machine (DNS rebinding). Listen sets it for a loopback address.
	Loopback bool
}

// DefaultRefresh is how often a running campaign's or sweep's open page
// asks for news.
const DefaultRefresh = 2 * time.Second

// Server is the console: New makes one, Handler serves it.
type Server struct {
	src       source
	webUI     string
	namespace string
	refresh   time.Duration
	errorLog  io.Writer
	loopback  bool
	now       func() time.Time

	mu       sync.Mutex
	closed   map[string]pipeline.CampaignStatus // "<workflow ID> <close time>" → state
	specs    map[string]pipeline.CampaignSpec   // campaign → its spec.json
	verified map[string]campaign.VerifyReport   // campaign → the last verify run on request
	sweepSp  map[string]pipeline.SweepSpec      // sweep → its spec.json
	listed   *listing                           // the last visibility listing, for a moment
}

// listing is Temporal's list of campaigns and sweeps at a moment.
type listing struct {
	at        time.Time
	campaigns []campaign.Listed
	sweeps    []campaign.Listed
}

// New returns the console over cfg.Service.
func New(cfg Config) *Server {
	return newServer(newServiceSource(cfg.Service), cfg)
}

func newServer(src source, cfg Config) *Server {
	s := &Server{src: src, webUI: strings.TrimRight(cfg.WebUI, "/"), namespace: cfg.Namespace, refresh: cfg.Refresh,
		errorLog: cfg.ErrorLog, loopback: cfg.Loopback, now: time.Now,
		closed: map[string]pipeline.CampaignStatus{}, specs: map[string]pipeline.CampaignSpec{},
		verified: map[string]campaign.VerifyReport{}, sweepSp: map[string]pipeline.SweepSpec{}}
	if s.refresh <= 0 {
		s.refresh = DefaultRefresh
	}
	if s.namespace == "" {
		s.namespace = "default"
	}
	if s.errorLog == nil {
		s.errorLog = io.Discard
	}
	return s
}

// Route is one address the console answers, for the reference.
type Route struct {
	Pattern string // as net/http.ServeMux takes it
	What    string
}

// Routes are the console's addresses: pages, the JSON they are built
// from, and the manifests' bytes. Scripts and bookmarks rely on them.
func Routes() []Route {
	return []Route{
		{"GET /{$}", "the campaigns and sweeps, newest first; ?state=, ?method= and ?sweep= filter the campaigns (sweep=- : campaigns no sweep ran)"},
		{"GET /campaigns/{campaign}", "a campaign: curves, rounds, clusters and trust, ε, releases, the manifest chain; a sweep's campaign by its name, or as <sweep>/<campaign> (redirected)"},
		{"GET /campaigns/{campaign}/verify", "runs verify on the campaign (re-hashes every artifact; read-only) and shows the report"},
		{"GET /campaigns/{campaign}/round-{NNNN}/manifest.json", "a round's manifest, the bytes S3 holds (attempt-N/manifest.json for a later attempt's)"},
		{"GET /sweeps/{sweep}", "a sweep: trials, best-so-far, parallel coordinates, rungs, each trial's curves"},
		{"GET /compare?campaign=A&campaign=B", "two to eight campaigns' curves on one figure"},
		{"GET /api/campaigns", "[]CampaignRow, with the same filters as /"},
		{"GET /api/campaigns/{campaign}", "CampaignDetail"},
		{"GET /api/campaigns/{campaign}/verify", "campaign.VerifyReport (as starter verify --format json prints it)"},
		{"GET /api/sweeps", "[]SweepRow"},
		{"GET /api/sweeps/{sweep}", "SweepDetail"},
		{"GET /api/compare?campaign=A&campaign=B", "Comparison"},
	}
}

// Handler serves the console. Every response carries the security
// headers; only GET and HEAD are answered.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.pageCampaigns)
	mux.HandleFunc("GET /campaigns/{campaign}", s.pageCampaign)
	mux.HandleFunc("GET /campaigns/{campaign}/verify", s.pageVerify)
	mux.HandleFunc("GET /campaigns/{sweep}/{campaign}", s.redirectSweepCampaign)
	mux.HandleFunc("GET /campaigns/{campaign}/{round}/manifest.json", s.manifestBytes)
	mux.HandleFunc("GET /campaigns/{campaign}/{round}/{attempt}/manifest.json", s.manifestBytes)
	mux.HandleFunc("GET /sweeps/{sweep}", s.pageSweep)
	mux.HandleFunc("GET /compare", s.pageCompare)
	mux.HandleFunc("GET /static/{file}", serveAsset)
	mux.HandleFunc("GET /api/campaigns", s.apiCampaigns)
	mux.HandleFunc("GET /api/campaigns/{campaign}", s.apiCampaign)
	mux.HandleFunc("GET /api/campaigns/{sweep}/{campaign}", s.apiCampaign)
	mux.HandleFunc("GET /api/campaigns/{campaign}/verify", s.apiVerify)
	mux.HandleFunc("GET /api/sweeps", s.apiSweeps)
	mux.HandleFunc("GET /api/sweeps/{sweep}", s.apiSweep)
	mux.HandleFunc("GET /api/compare", s.apiCompare)
	mux.HandleFunc("/", s.notFound)
	return s.guard(mux)
}

// contentSecurityPolicy lets a page load its own stylesheet, script and
// favicon and nothing else: no inline script or style, no other host, no
// frame, no form posting anywhere but here.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// guard sets the security headers, refuses other methods than GET and
// HEAD and, on loopback, other hosts than loopback names, and turns a
// panic into a 500 without its stack trace (which goes to the error log).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
		h.Set("Cache-Control", "no-store")
		if r.TLS != nil {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				fmt.Fprintf(s.errorLog, "console: %s %s: panic: %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
				s.fail(w, r, http.StatusInternalServerError, errors.New("internal error"))
			}
		}()
		if s.loopback && !loopbackHost(r.Host) {
			http.Error(w, "this console answers only to a loopback address (127.0.0.1, [::1], localhost)", http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the console is read-only: GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine's loopback
// interface.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// errNotFound marks what answers 404.
var errNotFound = errors.New("not found")

func notFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotFound, fmt.Sprintf(format, args...))
}

// badRequest marks what answers 400.
type badRequest struct{ msg string }

func (b badRequest) Error() string { return b.msg }

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotFound, notFoundf("%s", r.URL.Path))
}

// fail answers an error: JSON {"error": …} under /api/, else a page. A
// 500 says only that something failed; the error goes to the error log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	msg := err.Error()
	if code >= 500 {
		fmt.Fprintf(s.errorLog, "console: %s: %v\n", r.URL.Path, err)
		if code == http.StatusInternalServerError {
			msg = "internal error (the console's log says more)"
		}
	}
	if code == http.StatusNotFound {
		msg = "not found: " + r.URL.Path
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"error": msg})
		return
	}
	s.renderError(w, code, msg)
}

// failErr answers err with its status: 404 for errNotFound, 400 for a
// badRequest, 502 when Temporal or S3 failed.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	var bad badRequest
	switch {
	case errors.Is(err, errNotFound):
		s.fail(w, r, http.StatusNotFound, err)
	case errors.As(err, &bad):
		s.fail(w, r, http.StatusBadRequest, err)
	case errors.Is(err, context.Canceled):
		// The client went away.
	default:
		s.fail(w, r, http.StatusBadGateway, err)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// campaignName checks a campaign name from a path; a bad one is 404.
func campaignName(arg string) (string, error) {
	name, err := pipeline.CampaignName(arg)
	if err != nil {
		return "", notFoundf("campaign %q", arg)
	}
	return name, nil
}

// workflowLink is the Temporal Web UI's page of the workflow id, "" when
// the console does not know the UI.
func (s *Server) workflowLink(id string) string {
	if s.webUI == "" || id == "" {
		return ""
	}
	return s.webUI + "/namespaces/" + url.PathEscape(s.namespace) + "/workflows/" + url.PathEscape(id)
}
