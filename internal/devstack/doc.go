// Package devstack runs the local stack of real servers in process: an
// embedded Temporal server (SQLite file, static hosts), an embedded S3
// server (internal/s3local) and the Temporal Web UI (ui.go), all bound to
// 127.0.0.1, over one data directory. Re-using the directory resumes where
// the last run stopped.
//
// For the deployment path it can also keep Temporal's state in PostgreSQL
// (postgres.go starts Debian's as a child process; postgres_schema.go sets
// up the schemas with the server's own schema tool) and serve with mutual
// TLS (certs.go makes a test CA; authz.go is the per-site authorizer).
//
// It is the only package in the module that imports go.temporal.io/server:
// only the binaries and tests that need the local stack pay for linking it.
//
// It is not a production deployment: by default no TLS, no authentication
// on Temporal, one root account on S3. Real deployments point the same binaries at a
// Temporal cluster and an S3 endpoint (deploy/temporal/).
package devstack
