package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/secretfile"
)

// persistenceFlags checks --persistence, --postgres-url and
// --postgres-url-file together: the PostgreSQL databases to use, or nil
// for the SQLite file.
func persistenceFlags(persistence, postgresURL, urlFile string) (*devstack.PostgresDB, error) {
	if postgresURL != "" && urlFile != "" {
		return nil, fmt.Errorf("--postgres-url and --postgres-url-file both set; give one (the file keeps the password out of the process listing)")
	}
	switch persistence {
	case "sqlite":
		if postgresURL != "" || urlFile != "" {
			return nil, fmt.Errorf("--postgres-url or --postgres-url-file is set but --persistence is sqlite; add --persistence postgres")
		}
		return nil, nil
	case "postgres":
		if urlFile != "" {
			d, err := devstack.ReadPostgresURLFile(urlFile)
			if err != nil {
				return nil, fmt.Errorf("--postgres-url-file: %w", err)
			}
			return &d, nil
		}
		if postgresURL == "" {
			return nil, fmt.Errorf("--persistence postgres needs --postgres-url-file (devstack postgres --dir DIR writes DIR/%s)", devstack.PostgresURLFile)
		}
		d, err := devstack.ParsePostgresURL(postgresURL)
		if err != nil {
			return nil, fmt.Errorf("--postgres-url: %w", err)
		}
		return &d, nil
	default:
		return nil, fmt.Errorf("--persistence %q: want sqlite or postgres", persistence)
	}
}

// postgresInfo is what `devstack postgres` writes to DIR/postgres.json
// (mode 0600) once the server accepts logins.
type postgresInfo struct {
	URL string `json:"url"` // for devstack --postgres-url; holds the password
	PID int    `json:"pid"` // the postmaster's
	Log string `json:"log"`
}

// postgresLine is the line it prints: where the server is and the file
// with its URL, never the password.
type postgresLine struct {
	Addr    string `json:"addr"`     // host:port
	URLFile string `json:"url_file"` // for devstack --postgres-url-file (mode 0600)
	PID     int    `json:"pid"`
	Log     string `json:"log"`
}

// runPostgres is `devstack postgres --dir DIR [--port P]`: it runs a
// PostgreSQL server for the devstack's --persistence postgres (initdb on
// the first start, as the postgres account when run as root), writes its
// URL to DIR/postgres.url (mode 0600), prints where it is as JSON without
// the password, and runs until SIGINT or SIGTERM (then a fast shutdown,
// exit 0) or until the server dies (exit 1).
func runPostgres(args []string) int {
	fs := flag.NewFlagSet("devstack postgres", flag.ContinueOnError)
	dir := fs.String("dir", "", "cluster directory (required); created with initdb if missing, resumed if it exists; every directory above it must be searchable by the postgres account")
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: a free port)")
	readyTimeout := fs.Duration("ready-timeout", devstack.DefaultReadyTimeout, "how long the server may take to accept a login")
	tlsDir := fs.String("tls-dir", "", "accept TLS connections only, from clients presenting a certificate of the CA devstack certs wrote to this `DIR` (then the password); the server presents the stack's certificate, and the URL it writes presents it too")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: devstack postgres --dir DIR [--port P] [--tls-dir CERTS]")
		fs.PrintDefaults()
	}
	if !parseDirArgs(fs, args, dir) {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t0 := time.Now()
	pg, err := devstack.StartPostgres(ctx, devstack.PostgresConfig{Dir: *dir, Port: *port, ReadyTimeout: *readyTimeout, TLS: tlsFiles(*tlsDir)})
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack postgres: %v\n", err)
		return 1
	}
	info := postgresInfo{URL: pg.DB().URL(), PID: pg.PID(), Log: pg.LogPath()}
	b, _ := json.Marshal(info)
	abs, _ := filepath.Abs(*dir)
	urlFile := filepath.Join(abs, devstack.PostgresURLFile)
	if err := errors.Join(
		secretfile.Write(filepath.Join(abs, "postgres.json"), append(b, '\n')),
		secretfile.Write(urlFile, []byte(info.URL+"\n")),
	); err != nil {
		fmt.Fprintf(os.Stderr, "devstack postgres: %v\n", err)
		pg.Stop()
		return 1
	}
	line, _ := json.Marshal(postgresLine{Addr: pg.DB().Addr, URLFile: urlFile, PID: info.PID, Log: info.Log})
	fmt.Println(string(line))
	fmt.Fprintf(os.Stderr, "devstack postgres: ready in %v on %s (pid %d); stop with Ctrl-C or SIGTERM\n",
		time.Since(t0).Round(time.Millisecond), pg.DB().Addr, pg.PID())
	select {
	case <-ctx.Done():
		stop()
		fmt.Fprintln(os.Stderr, "devstack postgres: stopping")
		pg.Stop()
		return 0
	case <-pg.Done():
		fmt.Fprintf(os.Stderr, "devstack postgres: the server exited (log: %s)\n", pg.LogPath())
		return 1
	}
}
