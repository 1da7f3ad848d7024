package s3local

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestStartStop(t *testing.T) {
	wd, _ := os.Getwd()
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	s, err := Start(ctx, Config{Dir: dir, AccessKey: "k", SecretKey: "secret-key"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("metadata: %s", s.MetadataStore())
	resp, err := http.Get(s.URL() + HealthPath)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	// Unauthenticated requests other than health are refused.
	resp, err = http.Get(s.URL() + "/")
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous list: %v %v, want 403", resp.Status, err)
	}
	resp.Body.Close()

	if _, err := Start(ctx, Config{Dir: dir, AccessKey: "k", SecretKey: "s"}); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Start: %v, want ErrAlreadyRunning", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Getwd(); got != wd {
		t.Errorf("working directory after Stop %s, want %s", got, wd)
	}
	// After Stop, the port is released and a new server can start on it.
	s2, err := Start(ctx, Config{Dir: dir, Addr: s.Addr(), AccessKey: "k", SecretKey: "secret-key"})
	if err != nil {
		t.Fatalf("restart on %s: %v", s.Addr(), err)
	}
	s2.Stop()
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Config{AccessKey: "k", SecretKey: "s"}); err == nil {
		t.Error("no Dir: nil error")
	}
	if _, err := Start(ctx, Config{Dir: t.TempDir()}); err == nil {
		t.Error("no credentials: nil error")
	}
}
