package devstack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// DefaultNamespace is the namespace pre-created when TemporalConfig.Namespaces
// is empty, and the one the Stack reports.
const DefaultNamespace = "default"

// DefaultReadyTimeout bounds the readiness wait of each server when the config
// leaves it zero. A cold start is under a second, but a loaded 2-core machine
// running builds and tests next to it can take far longer.
const DefaultReadyTimeout = 120 * time.Second

const (
	temporalDBFile  = "temporal.db"
	temporalLogFile = "temporal.log"
	clusterName     = "active"
	loopback        = "127.0.0.1"
)

// TemporalConfig configures an embedded single-process Temporal server.
type TemporalConfig struct {
	// Dir holds the SQLite database (temporal.db) and the server log
	// (temporal.log). Created if missing. Re-using a directory resumes
	// everything persisted in it: namespaces, workflows, histories. Required.
	Dir string
	// Port is the frontend gRPC port clients dial on 127.0.0.1. Zero picks a
	// free port. A fixed Port also fixes the internal history and matching
	// services on Port+1 and Port+2 (Port+3 is only named as the address
	// of the worker service, which is not run: never bound, never
	// checked; see StartTemporal), so that a restart on the same port finds
	// the same addresses; with Port zero they are free ports.
	Port int
	// Namespaces are registered before the server starts (idempotent on an
	// existing database). Empty means {DefaultNamespace}.
	Namespaces []string
	// LogLevel is the server's zap level: "debug", "info", "warn" (default),
	// "error". The log goes to Dir/temporal.log, never to the terminal.
	LogLevel string
	// ReadyTimeout bounds the wait until the frontend answers a health
	// check. Zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Postgres, when set, keeps everything in these PostgreSQL databases
	// (schemas created or upgraded at start) instead of Dir/temporal.db;
	// Dir still holds the log.
	Postgres *PostgresDB
	// TLS, when set, makes the frontend require mutual TLS: it presents
	// TLS.Cert, accepts only client certificates signed by TLS.CA, and
	// authorizes each call by the client certificate's common name (see
	// authz.go). TLS.Cert must also be valid as a client certificate: the
	// readiness check presents it. The history and matching services then
	// require mutual TLS too, with a certificate only this process holds
	// (internodeTLS): every port of the server asks for a client
	// certificate.
	TLS *TLSFiles
}

// Temporal is a running embedded Temporal server.
type Temporal struct {
	server     temporal.Server
	hostPort   string
	namespaces []string
	dbPath     string
	logPath    string
	stopped    atomic.Bool
}

// StartTemporal starts the server and returns once a client can dial the
// frontend and its health check answers SERVING, or with an error after the
// ready timeout. The server runs until Stop.
func StartTemporal(ctx context.Context, cfg TemporalConfig) (*Temporal, error) {
	if cfg.Dir == "" {
		return nil, errors.New("devstack: TemporalConfig.Dir is empty")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("devstack: temporal dir %q: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("devstack: create temporal dir: %w", err)
	}
	namespaces := cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{DefaultNamespace}
	}
	level := cfg.LogLevel
	if level == "" {
		level = "warn"
	}

	ports, err := temporalPorts(cfg.Port)
	if err != nil {
		return nil, err
	}
	// The worker service's port (ports[3]) is only named, never bound (see
	// below), so while the server runs any outgoing connection may take it
	// as its source port: checking it would make a restart on the same
	// ports fail for a port nobody listens on.
	for _, p := range ports[:3] {
		if err := checkPortFree(p); err != nil {
			return nil, err
		}
	}
	hostPort := func(p int) string { return net.JoinHostPort(loopback, strconv.Itoa(p)) }

	dbPath := filepath.Join(dir, temporalDBFile)
	logPath := filepath.Join(dir, temporalLogFile)
	persistence, err := temporalPersistence(dbPath, cfg.Postgres, namespaces)
	if err != nil {
		return nil, err
	}
	if cfg.Postgres != nil {
		dbPath = ""
	}

	// No worker service: it runs Temporal's own system workflows (task queue
	// and history scavengers, batch operations, schedules, namespace
	// deletion, archival, parent-close policies for many children), none
	// of which a campaign uses; parent-close policies are applied by the
	// history service itself (dynamicConfig). Without it the stack starts
	// faster, idles quieter, and stops in milliseconds instead of waiting
	// about a second for the system workers' long polls to drain.
	// The static membership must still name an address for every service;
	// the worker's (Port+3) is never bound.
	services := map[primitives.ServiceName]int{
		primitives.FrontendService: ports[0],
		primitives.HistoryService:  ports[1],
		primitives.MatchingService: ports[2],
		primitives.WorkerService:   ports[3],
	}
	serviceNames := []string{
		string(primitives.FrontendService), string(primitives.HistoryService), string(primitives.MatchingService),
	}
	svcConfig := map[string]config.Service{}
	// Static hosts instead of ringpop membership: membership rows left in the
	// SQLite file by a previous (possibly killed) process otherwise make a
	// restart wait 50-60 s for the stale members to expire.
	hosts := map[primitives.ServiceName]static.Hosts{}
	for name, p := range services {
		svcConfig[string(name)] = config.Service{RPC: config.RPC{GRPCPort: p, BindOnIP: loopback}}
		hosts[name] = static.SingleLocalHost(hostPort(p))
	}

	frontend := hostPort(ports[0])
	cfgServer := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: loopback},
			// Metrics nil: no Prometheus listener. PProf port 0: no pprof.
		},
		Persistence: persistence,
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            svcConfig,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		PublicClient: config.PublicClient{HostPort: frontend},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
			},
		},
	}

	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: level, OutputFile: logPath}))
	opts := []temporal.ServerOption{
		temporal.WithConfig(cfgServer),
		temporal.ForServices(serviceNames),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	}
	var clientTLS *tls.Config
	if cfg.TLS != nil {
		if clientTLS, err = cfg.TLS.ClientConfig(); err != nil {
			return nil, fmt.Errorf("devstack: temporal TLS: %w", err)
		}
		internode, err := internodeTLS()
		if err != nil {
			return nil, fmt.Errorf("devstack: temporal TLS: %w", err)
		}
		cfgServer.Global.TLS = serverTLS(*cfg.TLS, internode)
		opts = append(opts, temporal.WithAuthorizer(siteAuthorizer{}), temporal.WithClaimMapper(newCertClaimMapper))
	}
	srv, err := temporal.NewServer(opts...)
	if err != nil {
		return nil, fmt.Errorf("devstack: create temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devstack: start temporal server (log: %s): %w", logPath, err)
	}
	t := &Temporal{server: srv, hostPort: frontend, namespaces: namespaces, dbPath: dbPath, logPath: logPath}

	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := WaitTemporalTLS(ctx, frontend, namespaces[0], timeout, clientTLS); err != nil {
		t.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	return t, nil
}

// temporalPersistence creates the schema if missing (SQLite: a new file;
// PostgreSQL: missing databases, tables or versions), registers the
// namespaces, and returns the stores of the server's configuration.
func temporalPersistence(dbPath string, pg *PostgresDB, namespaces []string) (config.Persistence, error) {
	var sqlCfg, visCfg *config.SQL
	var where string
	if pg != nil {
		if err := SetupPostgresSchema(*pg); err != nil {
			return config.Persistence{}, err
		}
		sqlCfg, visCfg = postgresSQL(*pg, pg.Database), postgresSQL(*pg, pg.Visibility)
		where = "postgres database " + pg.Database + " on " + pg.Addr
	} else {
		sqlCfg = &config.SQL{
			PluginName:   sqliteplugin.PluginName,
			DatabaseName: dbPath,
			ConnectAttributes: map[string]string{
				"mode": "rwc",
				// Keys that are not DSN parameters become PRAGMAs (see the
				// sqlite plugin's buildDSNAttr). WAL with synchronous=NORMAL
				// saves an fsync per transaction, which is most of the cost of
				// a round's many small writes, and still loses nothing when the
				// process is killed (kill -9); only a power loss can drop the
				// last transactions.
				"journal_mode": "wal",
				"synchronous":  "1",
			},
		}
		where = dbPath
		if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
			if err := sqlite.SetupSchema(sqlCfg); err != nil {
				return config.Persistence{}, fmt.Errorf("devstack: create temporal schema in %s: %w", dbPath, err)
			}
		} else if err != nil {
			return config.Persistence{}, fmt.Errorf("devstack: %w", err)
		}
	}
	var nsConfigs []*sqlite.NamespaceConfig
	for _, ns := range namespaces {
		c, err := sqlite.NewNamespaceConfig(clusterName, ns, false, nil)
		if err != nil {
			return config.Persistence{}, fmt.Errorf("devstack: namespace %q: %w", ns, err)
		}
		nsConfigs = append(nsConfigs, c)
	}
	// CreateNamespaces works on any SQL store despite its package's name:
	// it writes the namespace rows through the generic SQL persistence.
	if err := sqlite.CreateNamespaces(sqlCfg, nsConfigs...); err != nil {
		return config.Persistence{}, fmt.Errorf("devstack: register namespaces in %s: %w", where, err)
	}
	if visCfg == nil {
		return config.Persistence{
			DefaultStore: sqliteplugin.PluginName, VisibilityStore: sqliteplugin.PluginName, NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		}, nil
	}
	const store, visibility = "postgres", "postgres-visibility"
	return config.Persistence{
		DefaultStore: store, VisibilityStore: visibility, NumHistoryShards: 1,
		DataStores: map[string]config.DataStore{store: {SQL: sqlCfg}, visibility: {SQL: visCfg}},
	}, nil
}

// dynamicConfig is the embedded server's dynamic configuration: a
// single-process server on one SQLite file, tuned for latency rather than
// for protecting a shared cluster.
//
//   - The history service's queue readers (transfer, timer, visibility,
//     outbound) poll their queues at most MaxPollRPS times a second, 20 by
//     default: every task hand-off (a workflow task after an activity
//     completes, an activity task to matching) then waits up to 50 ms for
//     the next poll. Raised so that a hand-off costs what the work costs.
//   - Parent-close policies (a round or campaign still running when its
//     parent closes is terminated) are applied by the history service
//     inline, whatever the number of children, instead of by a system
//     workflow for ten or more: there is no worker service to run one.
//   - No tally of externally stored payloads (see below).
//   - As many concurrent long polls as site workers need (below).
//   - One partition per task queue: with the default four, a task written
//     to a partition without a waiting poller is forwarded to the root at
//     most matching.forwarderMaxRatePerSecond (10) times a second, and
//     polls spread over partitions; one partition has no forwarding at all.
//     Partitions exist to spread load over matching hosts; there is one.
func dynamicConfig() dynamicconfig.StaticClient {
	v := func(x any) []dynamicconfig.ConstrainedValue { return []dynamicconfig.ConstrainedValue{{Value: x}} }
	const pollRPS = 10000
	return dynamicconfig.StaticClient{
		// Search attributes registered by a worker are visible at once.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): v(true),

		dynamicconfig.TransferProcessorMaxPollRPS.Key():   v(pollRPS),
		dynamicconfig.TimerProcessorMaxPollRPS.Key():      v(pollRPS),
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): v(pollRPS),
		dynamicconfig.OutboundProcessorMaxPollRPS.Key():   v(pollRPS),

		dynamicconfig.EnableParentClosePolicyWorker.Key(): v(false),

		// Tallying the size of payloads stored outside Temporal walks every
		// payload of every event batch written (~2 % of a campaign's CPU);
		// campaigns store no payload outside, their payloads are
		// references to S3 objects of their own.
		dynamicconfig.ExternalPayloadsEnabled.Key(): v(false),

		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  v(1),
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): v(1),

		// Every site worker holds long polls open on its own task queue;
		// the default of 1,200 concurrent long polls per API and namespace
		// refused the polls of a 130-federation sweep's 1,040 in-process
		// site workers (two pollers each), and its campaigns never started.
		dynamicconfig.FrontendMaxConcurrentLongRunningRequestsPerInstance.Key(): v(1 << 20),
	}
}

// HostPort is the frontend address clients dial, e.g. "127.0.0.1:7233".
func (t *Temporal) HostPort() string { return t.hostPort }

// Namespaces are the namespaces registered at start.
func (t *Temporal) Namespaces() []string { return append([]string(nil), t.namespaces...) }

// DBPath is the SQLite file holding all persisted state, or empty when the
// state is in PostgreSQL.
func (t *Temporal) DBPath() string { return t.dbPath }

// LogPath is the server's log file.
func (t *Temporal) LogPath() string { return t.logPath }

// Stop stops the server and waits for it. Safe to call more than once.
func (t *Temporal) Stop() error {
	if !t.stopped.CompareAndSwap(false, true) {
		return nil
	}
	return t.server.Stop()
}

// WaitTemporal waits until a client can dial hostPort in namespace and the
// frontend's health check answers, retrying until timeout. It is the
// readiness check for any Temporal server, embedded or not: a listening
// socket alone does not mean the services behind it are up.
func WaitTemporal(ctx context.Context, hostPort, namespace string, timeout time.Duration) error {
	return WaitTemporalTLS(ctx, hostPort, namespace, timeout, nil)
}

// WaitTemporalTLS is WaitTemporal over TLS when tc is not nil.
func WaitTemporalTLS(ctx context.Context, hostPort, namespace string, timeout time.Duration, tc *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = checkTemporal(ctx, hostPort, namespace, tc)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devstack: temporal at %s not ready after %v: %v", hostPort, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func checkTemporal(ctx context.Context, hostPort, namespace string, tc *tls.Config) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(dctx, client.Options{HostPort: hostPort, Namespace: namespace, Logger: quietLogger{},
		ConnectionOptions: client.ConnectionOptions{TLS: tc}})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(dctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	// The frontend can be healthy before the namespace registry has loaded.
	_, err = c.WorkflowService().DescribeNamespace(dctx, describeNamespace(namespace))
	return err
}

// temporalPorts returns the frontend, history and matching ports, and the
// worker port the static membership names but nothing binds.
func temporalPorts(frontend int) ([]int, error) {
	if frontend < 0 || frontend > 65535-3 {
		return nil, fmt.Errorf("devstack: temporal port %d out of range", frontend)
	}
	if frontend != 0 {
		return []int{frontend, frontend + 1, frontend + 2, frontend + 3}, nil
	}
	ports := make([]int, 0, 4)
	// Hold all listeners until every port is chosen so the kernel cannot
	// hand out the same one twice.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range 4 {
		l, err := net.Listen("tcp", loopback+":0")
		if err != nil {
			return nil, fmt.Errorf("devstack: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("devstack: port %d on %s is not free (the embedded Temporal server needs it): %w", port, loopback, err)
	}
	return l.Close()
}

// quietLogger drops the SDK client's logs during readiness polling, where
// every failed dial before the server is up would otherwise be printed.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

var _ sdklog.Logger = quietLogger{}
