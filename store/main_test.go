package store

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/internal/s3local"
)

// testStore talks to a real S3 server (versitygw via internal/s3local) on a
// temporary directory and a free 127.0.0.1 port, started once for the package.
var testStore *Store

const (
	testAccess = "ptopofl-test"
	testSecret = "ptopofl-test-secret-key"
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "store-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := s3local.Start(ctx, s3local.Config{Dir: dir, AccessKey: testAccess, SecretKey: testSecret})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	testStore, err = New(Config{Endpoint: srv.URL(), Bucket: "ptopofl-test", AccessKey: testAccess, SecretKey: testSecret})
	if err == nil {
		err = testStore.EnsureBucket(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
