// Package devstack runs the local stack of real servers in process: an
// embedded Temporal server (SQLite file, static hosts) and an embedded S3
// server (internal/s3local), both bound to 127.0.0.1, over one data
// directory. Re-using the directory resumes where the last run stopped.
//
// It is the only package in the module that imports go.temporal.io/server:
// only the binaries and tests that need the local stack pay for linking it.
//
// It is not a production deployment: no TLS, no authentication on Temporal,
// one root account on S3. Real deployments point the same binaries at a
// Temporal cluster and an S3 endpoint (deploy/temporal/).
package devstack
