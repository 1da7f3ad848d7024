package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// assets are the console's stylesheet, script, favicon and page templates,
// embedded in the binary: a page needs nothing from anywhere else.
//
//go:embed assets/console.css assets/console.js assets/favicon.svg assets/templates/*.html
var assets embed.FS

// staticTypes are the files served under /static/ and their types.
var staticTypes = map[string]string{
	"console.css": "text/css; charset=utf-8",
	"console.js":  "text/javascript; charset=utf-8",
	"favicon.svg": "image/svg+xml",
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	typ, ok := staticTypes[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", typ)
	w.Write(b)
}

var funcs = template.FuncMap{
	"f4":  func(v float64) string { return fmt.Sprintf("%.4f", v) },
	"f3":  func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"f4p": func(v *float64) string { return fmtPtr("%.4f", v) },
	"f3p": func(v *float64) string { return fmtPtr("%.3f", v) },
	"g":   func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) },
	"deref": func(v *int) int {
		if v == nil {
			return 0
		}
		return *v
	},
	"join": strings.Join,
	"short": func(sha string) string {
		if len(sha) > 12 {
			return sha[:12]
		}
		return sha
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
}

func fmtPtr(format string, v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf(format, *v)
}

// pages are the parsed templates, one set per page.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, p := range []string{"campaigns", "campaign", "sweep", "compare", "verify", "error"} {
		out[p] = template.Must(template.New(p).Funcs(funcs).ParseFS(assets, "assets/templates/layout.html", "assets/templates/"+p+".html"))
	}
	return out
}()

// layout is what every page's frame shows.
type layout struct {
	Title    string
	Updated  time.Time
	Live     bool
	LiveWhat string
	Version  string
	Refresh  time.Duration
	API      string
}

func (l layout) RefreshMillis() int64 { return l.Refresh.Milliseconds() }

func (l layout) RefreshText() string { return l.Refresh.String() }

// render executes page's template with data into a buffer first, so that
// a failure answers 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, code int, page string, data any) {
	var buf bytes.Buffer
	if err := pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		fmt.Fprintf(s.errorLog, "console: render %s: %v\n", page, err)
		http.Error(w, "internal error (the console's log says more)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

type errorPage struct {
	layout
	Code    int
	Status  string
	Message string
}

func (s *Server) renderError(w http.ResponseWriter, code int, msg string) {
	s.render(w, code, "error", errorPage{
		layout: layout{Title: http.StatusText(code), Updated: s.now(), Refresh: s.refresh, API: "/api/campaigns"},
		Code:   code, Status: http.StatusText(code), Message: msg,
	})
}
