// Command devstack runs the local stack (an embedded Temporal server and an
// embedded S3 server, both on 127.0.0.1) as a separate process, for
// multi-process set-ups such as the crash tests:
//
//	devstack --data DIR [--temporal-port P] [--s3-port Q] [--namespace NS] [--bucket B] [--services LIST] [--ui=false] [--ui-port U]
//
// Once both servers are ready it prints one JSON line with the endpoints to
// stdout and writes the same to DIR/endpoints.json. The S3 credentials are in
// DIR/credentials.env (PTOPOFL_S3_ACCESS_KEY, PTOPOFL_S3_SECRET_KEY; mode
// 0600, for --s3-credentials-file), never on stdout. It runs until SIGINT or
// SIGTERM, then stops both servers and exits 0.
//
// Site workers started by hand get their own S3 identity, which may touch
// only that site's artifacts: with the stack running,
//
//	devstack --data DIR --grant-sites hospital-a,hospital-b
//
// prints DIR/sites/<site>.env for each (mode 0600: give it to the site's
// worker with --s3-credentials-file). Temporal payloads are encrypted with
// DIR/payload-keys: give it to every worker with --payload-key-file.
//
// With --persistence postgres --postgres-url-file FILE (a file of mode 0600
// holding postgres://USER:PW@HOST:PORT/DB; --postgres-url takes the URL
// itself, where every local account's process listing shows it) Temporal
// keeps its state in PostgreSQL (schemas created or upgraded at start)
// instead of DIR/temporal/temporal.db. The subcommand
//
//	devstack postgres --dir DIR [--port P]
//
// runs a PostgreSQL server for it and writes its URL to DIR/postgres.url
// (see postgres.go). With --tls-dir DIR2 (made by `devstack certs --dir
// DIR2 --clients ...`) every TCP port of the process asks for a client
// certificate signed by that CA: the Temporal frontend authorizes each call
// by the certificate's name (a site's certificate polls only its own task
// queue), Temporal's history and matching services accept only a
// certificate made in memory at each start, S3 answers HTTPS with a client
// certificate only, and the Web UI only an operator's certificate
// (ptopofl-starter).
//
// The Temporal Web UI is served on 127.0.0.1 (endpoints "ui") unless
// --ui=false.
//
// Starting again with the same DIR resumes: workflows, histories and objects
// persist. Fixed ports can be reused right after a kill -9. A fixed
// --temporal-port P also uses P+1 and P+2 for Temporal's internal services.
//
// --services s3 or --services temporal runs only that server, so that the
// two can run as two processes over the same DIR and ports and either can
// be stopped and restarted while the other stays up (the outage tests of
// e2e do). Each writes DIR/endpoints-<service>.json instead of
// endpoints.json; start the s3 one first, since it creates the credentials.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/internal/devstack"
)

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) > 1 && os.Args[1] == "postgres" {
		return runPostgres(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "certs" {
		return runCerts(os.Args[2:])
	}
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	data := fs.String("data", "", "data directory (required); created if missing, resumed if it exists")
	temporalPort := fs.Int("temporal-port", 0, "Temporal frontend port on 127.0.0.1 (0: a free port); P+1 and P+2 are used too")
	s3Port := fs.Int("s3-port", 0, "S3 port on 127.0.0.1 (0: a free port)")
	namespace := fs.String("namespace", devstack.DefaultNamespace, "Temporal namespace to create")
	bucket := fs.String("bucket", devstack.DefaultBucket, "S3 bucket to create")
	readyTimeout := fs.Duration("ready-timeout", devstack.DefaultReadyTimeout, "how long each server may take to become ready")
	grant := fs.String("grant-sites", "", "comma-separated site names: give each its own S3 identity on the devstack already running over --data, print its credentials file, and exit")
	persistence := fs.String("persistence", "sqlite", "where Temporal keeps its state: sqlite (a file in DIR) or postgres (--postgres-url)")
	ui := fs.Bool("ui", true, "serve the Temporal Web UI on 127.0.0.1 (--ui=false: off)")
	uiPort := fs.Int("ui-port", 0, "Web UI port on 127.0.0.1 (0: a free port)")
	tlsDir := fs.String("tls-dir", "", "serve every port with mutual TLS (Temporal with per-site authorization, S3, the Web UI for the starter's certificate), with the CA and certificates devstack certs wrote to this `DIR`")
	postgresURL := fs.String("postgres-url", "", "with --persistence postgres: postgres://USER:PASSWORD@HOST:PORT/DATABASE[?visibility=DB2] (shows the password in the process listing: prefer --postgres-url-file)")
	postgresURLFile := fs.String("postgres-url-file", "", "with --persistence postgres: a file (mode 0600) whose first line is the --postgres-url, as devstack postgres writes it to DIR/"+devstack.PostgresURLFile)
	servicesFlag := fs.String("services", "all", `servers to run: "all", "s3" or "temporal" (comma-separated)`)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: devstack --data DIR [--temporal-port P] [--s3-port Q] [--namespace NS] [--bucket B] [--services all|s3|temporal]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *data == "" || fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	services, err := devstack.ParseServices(*servicesFlag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: --services: %v\n", err)
		return 2
	}
	// Absolute before starting: the embedded S3 server changes the working
	// directory.
	dir, err := filepath.Abs(*data)
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: --data %s: %v\n", *data, err)
		return 1
	}

	pg, err := persistenceFlags(*persistence, *postgresURL, *postgresURLFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *grant != "" {
		paths, err := devstack.GrantLiveSites(ctx, dir, strings.Split(*grant, ","))
		if err != nil {
			fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
			return 1
		}
		for _, p := range paths {
			fmt.Println(p)
		}
		return 0
	}

	t0 := time.Now()
	stack, err := devstack.Start(ctx, devstack.Config{
		Dir: dir, TemporalPort: *temporalPort, S3Port: *s3Port,
		Namespace: *namespace, Bucket: *bucket, ReadyTimeout: *readyTimeout, Services: services,
		Postgres: pg, TLS: tlsFiles(*tlsDir), NoUI: !*ui, UIPort: *uiPort,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
		return 1
	}
	line, err := json.Marshal(stack.Endpoints())
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
		stack.Stop()
		return 1
	}
	fmt.Println(string(line))
	ep := stack.Endpoints()
	fmt.Fprintf(os.Stderr, "devstack: ready in %v; Temporal %s, S3 %s; credentials in %s; stop with Ctrl-C or SIGTERM\n",
		time.Since(t0).Round(time.Millisecond), orNone(ep.Temporal), orNone(ep.S3URL), orNone(ep.CredentialsFile))
	if u := ep.UI; u != "" {
		fmt.Fprintf(os.Stderr, "devstack: Temporal Web UI at %s\n", u)
	}

	<-ctx.Done()
	stop() // a second signal now kills the process the default way
	fmt.Fprintln(os.Stderr, "devstack: stopping")
	if err := stack.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "devstack: stop: %v\n", err)
		return 1
	}
	return 0
}

// orNone marks an endpoint of a service this process does not run.
func orNone(s string) string {
	if s == "" {
		return "(not run here)"
	}
	return s
}
