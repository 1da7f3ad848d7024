package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ptopofl/ptopofl/internal/console"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/stackconn"
)

// runConsole serves the campaign console (package console) until
// interrupted: `starter console [--addr HOST:PORT]`. It prints one line,
// "console URL", once it listens.
func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	lc := console.ListenConfig{}
	var names, webUI string
	var refresh time.Duration
	conn, _, err := stackconn.ParseCommand("console", args, stderr, func(fs *flag.FlagSet) func() error {
		fs.StringVar(&lc.Addr, "addr", console.DefaultAddr, "HOST:PORT to listen on (port 0: a free one); beyond loopback only with --tls-cert, --tls-key and --tls-client-ca")
		fs.StringVar(&lc.CertFile, "tls-cert", "", "the console's certificate (PEM): serve HTTPS, to client certificates only")
		fs.StringVar(&lc.KeyFile, "tls-key", "", "the key of --tls-cert (PEM)")
		fs.StringVar(&lc.ClientCAFile, "tls-client-ca", "", "the CA (PEM) whose client certificates are let in (default: --temporal-tls-ca, the deployment's CA)")
		fs.StringVar(&names, "tls-client-names", devstack.StarterCommonName, "comma-separated common names of the client certificates let in: the operators' (empty: any the CA signed)")
		fs.StringVar(&webUI, "temporal-ui", "", "the Temporal Web UI's address, for links to each workflow (default with --local: the local stack's UI)")
		fs.DurationVar(&refresh, "refresh", console.DefaultRefresh, "how often an open page of a running campaign or sweep asks for news")
		return func() error {
			if refresh < 100*time.Millisecond {
				return inputErrorf("--refresh %v: want at least 100ms", refresh)
			}
			return nil
		}
	}, func(rest []string) error {
		if len(rest) > 0 {
			return inputErrorf("unexpected argument %q", rest[0])
		}
		return nil
	})
	if err != nil {
		return err
	}
	if lc.TLS() && lc.ClientCAFile == "" {
		lc.ClientCAFile = conn.Remote.TLSCA
	}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			lc.ClientNames = append(lc.ClientNames, n)
		}
	}
	if err := lc.Check(); err != nil {
		return inputErrorf("%v", err)
	}
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	namespace := conn.Remote.Namespace
	if e.Local != nil {
		namespace = e.Local.Namespace
		if webUI == "" {
			webUI = e.Local.UI
		}
	}
	l, err := console.Listen(lc)
	if err != nil {
		return err
	}
	srv := console.New(console.Config{Service: e.Svc, WebUI: webUI, Namespace: namespace, Refresh: refresh, ErrorLog: stderr, Loopback: l.Loopback})
	fmt.Fprintf(stdout, "console %s\n", l.URL)
	return console.Serve(ctx, l, srv.Handler())
}
