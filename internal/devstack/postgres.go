package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/internal/secretfile"
)

// PostgresUser is the database role that owns Temporal's databases in a
// PostgreSQL started by StartPostgres.
const PostgresUser = "temporal"

// PostgresDatabase and PostgresVisibilityDatabase are the databases
// Temporal's persistence and visibility stores use on PostgreSQL (the
// names of Temporal's own deployment tooling).
const (
	PostgresDatabase           = "temporal"
	PostgresVisibilityDatabase = "temporal_visibility"
)

// PostgresURLFile is the file, in the directory of `devstack postgres`,
// with the server's URL, password included (mode 0600): what devstack
// --postgres-url-file reads (ReadPostgresURLFile).
const PostgresURLFile = "postgres.url"

// ReadPostgresURLFile reads a URL (ParsePostgresURL) from the first
// non-blank line of path, a file only its owner may read (package
// secretfile).
func ReadPostgresURLFile(path string) (PostgresDB, error) {
	b, err := secretfile.Read(path)
	if err != nil {
		return PostgresDB{}, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			d, err := ParsePostgresURL(line)
			if err != nil {
				return PostgresDB{}, fmt.Errorf("%s: %w", path, err)
			}
			return d, nil
		}
	}
	return PostgresDB{}, fmt.Errorf("%s: no URL in it", path)
}

// Files inside PostgresConfig.Dir.
const (
	postgresDataDir  = "data"         // PGDATA, made by initdb
	postgresPassword = "password"     // the PostgresUser role's password (mode 0600)
	postgresLogFile  = "postgres.log" // the server's stdout and stderr
	postgresOSUser   = "postgres"     // the account the server runs as when we are root
	postgresBinGlob  = "/usr/lib/postgresql/*/bin"
	postgresInstall  = "apt-get update && apt-get install -y postgresql"
	postgresMaxConns = 10
)

// PostgresConfig configures a PostgreSQL server that StartPostgres runs as
// a child process for the Temporal server's persistence.
type PostgresConfig struct {
	// Dir holds the cluster (Dir/data, made by initdb on the first start),
	// the role's password and the server log. Starting again on the same
	// Dir resumes. When this process runs as root the server runs as the
	// "postgres" account, which then owns Dir: every directory above Dir
	// must be searchable by it (a directory under /tmp made by
	// os.MkdirTemp is; a test's t.TempDir() is not). Required.
	Dir string
	// Port is the port on 127.0.0.1; zero picks a free one.
	Port int
	// BinDir holds initdb and postgres; empty means the newest
	// /usr/lib/postgresql/*/bin (Debian's layout).
	BinDir string
	// ReadyTimeout bounds the wait until the server accepts a login. Zero
	// means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// TLS, when set, makes the server accept TLS connections only, with
	// TLS.Cert as its certificate, from clients that present a
	// certificate signed by TLS.CA (and then the role's password): see
	// postgresTLS. The server's DB() then connects the same way,
	// presenting TLS.Cert.
	TLS *TLSFiles
}

// Postgres is a running PostgreSQL server started by StartPostgres.
type Postgres struct {
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	db      PostgresDB
	logPath string
}

// PostgresDB says where Temporal's databases are on a PostgreSQL server and
// how to log in. Its text form is a URL (see ParsePostgresURL).
type PostgresDB struct {
	Addr       string // host:port
	User       string
	Password   string
	Database   string // Temporal's persistence store
	Visibility string // Temporal's visibility store
	// TLSCA, TLSCert and TLSKey, when set, connect over TLS verified
	// against TLSCA (libpq's sslmode=verify-full: the server's certificate
	// must name Addr's host), presenting TLSCert and TLSKey; a server
	// started by StartPostgres with TLS requires that certificate.
	TLSCA, TLSCert, TLSKey string
}

// URL is the database as postgres://user:password@host:port/database,
// with ?visibility=NAME when the visibility database is not the default
// name, and libpq's sslmode=verify-full&sslrootcert=…&sslcert=…&sslkey=…
// with TLS. The password is in it: do not log it.
func (d PostgresDB) URL() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(d.User, d.Password), Host: d.Addr, Path: "/" + d.Database}
	q := url.Values{}
	if d.Visibility != PostgresVisibilityDatabase {
		q.Set("visibility", d.Visibility)
	}
	if d.TLSCA != "" {
		q.Set("sslmode", "verify-full")
		q.Set("sslrootcert", d.TLSCA)
		if d.TLSCert != "" {
			q.Set("sslcert", d.TLSCert)
			q.Set("sslkey", d.TLSKey)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ParsePostgresURL reads postgres://user:password@host:port/database
// [?visibility=NAME][&sslmode=verify-full&sslrootcert=CA[&sslcert=C&sslkey=K]];
// the database defaults to PostgresDatabase and the visibility database
// to PostgresVisibilityDatabase. TLS, when asked for, is verify-full only:
// a connection that would not check whom it talks to is refused here.
func ParsePostgresURL(s string) (PostgresDB, error) {
	u, err := url.Parse(s)
	if err != nil {
		return PostgresDB{}, fmt.Errorf("postgres URL: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return PostgresDB{}, fmt.Errorf("postgres URL: scheme %q, want postgres://", u.Scheme)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return PostgresDB{}, fmt.Errorf("postgres URL: host %q: %w", u.Host, err)
	}
	if u.User == nil || u.User.Username() == "" {
		return PostgresDB{}, errors.New("postgres URL: no user")
	}
	pw, _ := u.User.Password()
	q := u.Query()
	d := PostgresDB{Addr: u.Host, User: u.User.Username(), Password: pw,
		Database: strings.TrimPrefix(u.Path, "/"), Visibility: q.Get("visibility"),
		TLSCA: q.Get("sslrootcert"), TLSCert: q.Get("sslcert"), TLSKey: q.Get("sslkey")}
	switch mode := q.Get("sslmode"); {
	case mode == "" && d.TLSCA == "" && d.TLSCert == "":
	case mode != "verify-full":
		return PostgresDB{}, fmt.Errorf("postgres URL: sslmode %q: only verify-full is supported (with sslrootcert)", mode)
	case d.TLSCA == "":
		return PostgresDB{}, errors.New("postgres URL: sslmode=verify-full needs sslrootcert")
	case (d.TLSCert == "") != (d.TLSKey == ""):
		return PostgresDB{}, errors.New("postgres URL: sslcert and sslkey go together")
	}
	if d.Database == "" {
		d.Database = PostgresDatabase
	}
	if d.Visibility == "" {
		d.Visibility = PostgresVisibilityDatabase
	}
	if d.Database == d.Visibility {
		return PostgresDB{}, fmt.Errorf("postgres URL: persistence and visibility both in database %q; Temporal needs two", d.Database)
	}
	return d, nil
}

// StartPostgres creates the cluster in cfg.Dir if it has none (initdb, a
// password login for PostgresUser on 127.0.0.1 only, no Unix socket),
// starts the server as a child process and returns once it accepts a
// login. Run as root, the server runs as the "postgres" account (the
// server refuses root). A server killed with SIGKILL leaves its lock file
// and shared memory behind; starting again on the same Dir retries until
// the server's own checks find them stale.
func StartPostgres(ctx context.Context, cfg PostgresConfig) (*Postgres, error) {
	if cfg.Dir == "" {
		return nil, errors.New("devstack: PostgresConfig.Dir is empty")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("devstack: postgres dir %q: %w", cfg.Dir, err)
	}
	bin, err := postgresBinDir(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("devstack: create postgres dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("devstack: give %s to the %s account: %w", dir, postgresOSUser, err)
		}
	}
	password, err := initPostgres(ctx, dir, bin, cred)
	if err != nil {
		return nil, err
	}
	var tlsArgs []string
	if cfg.TLS != nil {
		if tlsArgs, err = postgresTLS(dir, *cfg.TLS, cred); err != nil {
			return nil, err
		}
	}
	port := cfg.Port
	if port == 0 {
		if port, err = FreePortRun(1); err != nil {
			return nil, fmt.Errorf("devstack: postgres port: %w", err)
		}
	}
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	p := &Postgres{
		db: PostgresDB{Addr: net.JoinHostPort(loopback, strconv.Itoa(port)), User: PostgresUser, Password: password,
			Database: PostgresDatabase, Visibility: PostgresVisibilityDatabase},
		logPath: filepath.Join(dir, postgresLogFile),
	}
	if cfg.TLS != nil {
		p.db.TLSCA, p.db.TLSCert, p.db.TLSKey = cfg.TLS.CA, cfg.TLS.Cert, cfg.TLS.Key
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := p.start(bin, dir, port, cred, tlsArgs); err != nil {
			return nil, fmt.Errorf("devstack: postgres: %w", err)
		}
		err := p.waitReady(ctx, deadline)
		if err == nil {
			return p, nil
		}
		// A server that exited at once may have found the lock file or
		// shared memory of a killed predecessor still in use by its
		// backends, which exit shortly after their postmaster: try again.
		select {
		case <-p.done:
		default:
			p.Stop()
			return nil, fmt.Errorf("devstack: postgres on %s: %w (log: %s)", p.db.Addr, err, p.logPath)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("devstack: postgres on %s did not start: %v (log: %s)", p.db.Addr, p.waitErr, p.logPath)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// start runs the postmaster, as the unprivileged account when cred is set,
// with the settings of extra besides its own.
func (p *Postgres) start(bin, dir string, port int, cred *syscall.Credential, extra []string) error {
	lf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("postgres log: %w", err)
	}
	defer lf.Close()
	args := append([]string{"-D", filepath.Join(dir, postgresDataDir),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=" + loopback,
		"-c", "unix_socket_directories=",
		"-c", "max_connections=100",
	}, extra...)
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Dir = dir
	// Pdeathsig: if this process dies, even by SIGKILL, the server gets
	// SIGQUIT (its immediate shutdown) instead of living on orphaned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	return nil
}

// waitReady logs in until it works, the server exits, or the deadline.
func (p *Postgres) waitReady(ctx context.Context, deadline time.Time) error {
	var last error
	for {
		if last = pingPostgres(p.db); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("server exited: %v", p.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no login after the ready timeout: %w", last)
		}
	}
}

// DB is where Temporal's databases are on this server, with the login.
func (p *Postgres) DB() PostgresDB { return p.db }

// PID is the postmaster's process ID.
func (p *Postgres) PID() int { return p.cmd.Process.Pid }

// LogPath is the server's log file.
func (p *Postgres) LogPath() string { return p.logPath }

// Done is closed when the server process has exited.
func (p *Postgres) Done() <-chan struct{} { return p.done }

// Stop asks the server for a fast shutdown (SIGINT: connections are
// closed, everything committed is kept) and waits for it. Safe to call
// more than once and after the server exited.
func (p *Postgres) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// Files of a server with TLS, in PostgresConfig.Dir (owned by the server's
// account: PostgreSQL refuses a key file others may read).
const (
	postgresTLSDir  = "tls"         // server.pem, server-key.pem, ca.pem: copies, made at every start
	postgresHBAFile = "pg_hba.conf" // who may connect, written at every start
)

// postgresTLS copies f's certificate, key and CA into dir/tls for the
// server's account, writes an authentication file that lets the role in
// over TLS only, with a client certificate signed by f.CA and then its
// password (hostssl, clientcert=verify-ca; no line for plain TCP), and
// returns the server settings that use them. Run at every start, so new
// certificates take effect on a restart.
func postgresTLS(dir string, f TLSFiles, cred *syscall.Credential) ([]string, error) {
	tdir := filepath.Join(dir, postgresTLSDir)
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		return nil, fmt.Errorf("devstack: postgres TLS: %w", err)
	}
	key, err := secretfile.Read(f.Key)
	if err != nil {
		return nil, fmt.Errorf("devstack: postgres TLS key: %w", err)
	}
	cert, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("devstack: postgres TLS: %w", err)
	}
	ca, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("devstack: postgres TLS: %w", err)
	}
	files := []struct {
		path string
		data []byte
	}{
		{filepath.Join(tdir, "server.pem"), cert},
		{filepath.Join(tdir, "server-key.pem"), key},
		{filepath.Join(tdir, "ca.pem"), ca},
		{filepath.Join(dir, postgresHBAFile), []byte("# Written by devstack postgres at every start: TLS with a client certificate, then the password.\n" +
			"hostssl all " + PostgresUser + " " + loopback + "/32 scram-sha-256 clientcert=verify-ca\n")},
	}
	for _, fl := range files {
		if err := secretfile.Write(fl.path, fl.data); err != nil {
			return nil, fmt.Errorf("devstack: postgres TLS: %w", err)
		}
	}
	if cred != nil {
		for _, p := range []string{tdir, files[0].path, files[1].path, files[2].path, files[3].path} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("devstack: give %s to the %s account: %w", p, postgresOSUser, err)
			}
		}
	}
	return []string{
		"-c", "ssl=on",
		"-c", "ssl_cert_file=" + files[0].path,
		"-c", "ssl_key_file=" + files[1].path,
		"-c", "ssl_ca_file=" + files[2].path,
		"-c", "hba_file=" + files[3].path,
	}, nil
}

// initPostgres runs initdb unless dir already holds a cluster, and returns
// the PostgresUser role's password.
func initPostgres(ctx context.Context, dir, bin string, cred *syscall.Credential) (string, error) {
	pwPath := filepath.Join(dir, postgresPassword)
	data := filepath.Join(dir, postgresDataDir)
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		b, err := secretfile.Read(pwPath)
		if err != nil {
			return "", fmt.Errorf("devstack: postgres cluster in %s without its password: %w", data, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	// A cluster whose initdb was interrupted is removed and made again.
	if err := os.RemoveAll(data); err != nil {
		return "", fmt.Errorf("devstack: remove partial cluster %s: %w", data, err)
	}
	password := randomHex(16)
	if err := secretfile.Write(pwPath, []byte(password+"\n")); err != nil {
		return "", fmt.Errorf("devstack: write postgres password: %w", err)
	}
	if cred != nil {
		if err := os.Chown(pwPath, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", fmt.Errorf("devstack: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data,
		"--username="+PostgresUser, "--pwfile="+pwPath,
		"--auth-host=scram-sha-256", "--auth-local=reject",
		"--encoding=UTF8", "--locale=C", "--no-instructions")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("devstack: initdb %s: %w\n%s", data, err, out)
	}
	return password, nil
}

// postgresBinDir is dir, or the newest Debian PostgreSQL's bin directory.
func postgresBinDir(dir string) (string, error) {
	if dir == "" {
		dirs, _ := filepath.Glob(postgresBinGlob)
		// Newest major version last: compare numerically ("9.6" < "15").
		sort.Slice(dirs, func(i, j int) bool {
			vi, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[i])), 64)
			vj, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[j])), 64)
			return vi < vj
		})
		if len(dirs) == 0 {
			return "", fmt.Errorf("devstack: no PostgreSQL server in %s; install it with: %s", postgresBinGlob, postgresInstall)
		}
		dir = dirs[len(dirs)-1]
	}
	for _, b := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("devstack: PostgreSQL's %s not in %s (install with: %s): %w", b, dir, postgresInstall, err)
		}
	}
	return dir, nil
}

// postgresCredential is the unprivileged account to run the server as when
// this process is root (PostgreSQL refuses to run as root), or nil.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(postgresOSUser)
	if err != nil {
		return nil, fmt.Errorf("devstack: PostgreSQL refuses to run as root and there is no %q account to run it as (it comes with the package: %s): %w",
			postgresOSUser, postgresInstall, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("devstack: account %s: uid %q gid %q", postgresOSUser, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
