package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/internal/devstack"
)

// persistenceFlags checks --persistence and --postgres-url together: the
// PostgreSQL databases to use, or nil for the SQLite file.
func persistenceFlags(persistence, postgresURL string) (*devstack.PostgresDB, error) {
	switch persistence {
	case "sqlite":
		if postgresURL != "" {
			return nil, fmt.Errorf("--postgres-url is set but --persistence is sqlite; add --persistence postgres")
		}
		return nil, nil
	case "postgres":
		if postgresURL == "" {
			return nil, fmt.Errorf("--persistence postgres needs --postgres-url (start a server with: devstack postgres --dir DIR)")
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

// postgresInfo is the line `devstack postgres` prints once the server
// accepts logins, and writes to DIR/postgres.json.
type postgresInfo struct {
	URL string `json:"url"` // for devstack --postgres-url; holds the password
	PID int    `json:"pid"` // the postmaster's
	Log string `json:"log"`
}

// runPostgres is `devstack postgres --dir DIR [--port P]`: it runs a
// PostgreSQL server for the devstack's --persistence postgres (initdb on
// the first start, as the postgres account when run as root), prints its
// URL as JSON, and runs until SIGINT or SIGTERM (then a fast shutdown,
// exit 0) or until the server dies (exit 1).
func runPostgres(args []string) int {
	fs := flag.NewFlagSet("devstack postgres", flag.ContinueOnError)
	dir := fs.String("dir", "", "cluster directory (required); created with initdb if missing, resumed if it exists; every directory above it must be searchable by the postgres account")
	port := fs.Int("port", 0, "port on 127.0.0.1 (0: a free port)")
	readyTimeout := fs.Duration("ready-timeout", devstack.DefaultReadyTimeout, "how long the server may take to accept a login")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: devstack postgres --dir DIR [--port P]")
		fs.PrintDefaults()
	}
	if !parseDirArgs(fs, args, dir) {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t0 := time.Now()
	pg, err := devstack.StartPostgres(ctx, devstack.PostgresConfig{Dir: *dir, Port: *port, ReadyTimeout: *readyTimeout})
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack postgres: %v\n", err)
		return 1
	}
	info := postgresInfo{URL: pg.DB().URL(), PID: pg.PID(), Log: pg.LogPath()}
	line, _ := json.Marshal(info)
	abs, _ := filepath.Abs(*dir)
	if err := os.WriteFile(filepath.Join(abs, "postgres.json"), append(line, '\n'), 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "devstack postgres: %v\n", err)
		pg.Stop()
		return 1
	}
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
