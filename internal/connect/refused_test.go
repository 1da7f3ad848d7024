package connect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// refusingFrontend refuses every activity poll, as the devstack's
// authorizer refuses a site's certificate on another site's queue, and
// answers GetSystemInfo.
type refusingFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (refusingFrontend) PollActivityTaskQueue(_ context.Context, r *workflowservice.PollActivityTaskQueueRequest) (*workflowservice.PollActivityTaskQueueResponse, error) {
	// As the server sends it: the service error as a gRPC status.
	return nil, serviceerror.ToStatus(serviceerror.NewPermissionDenied("Request unauthorized.",
		"certificate ptopofl-site-b may poll only its own task queue, not "+r.GetTaskQueue().GetName())).Err()
}

func (refusingFrontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// TestRefusedPolls: a refused poll reaches the callback with its queue and
// the authorizer's reason; other calls and other errors do not.
func TestRefusedPolls(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(srv, refusingFrontend{})
	go srv.Serve(l)
	defer srv.Stop()

	type refusal struct {
		queue string
		err   error
	}
	var got []refusal
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		RefusedPolls(func(q string, err error) { got = append(got, refusal{q, err}) }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ws := workflowservice.NewWorkflowServiceClient(cc)
	ctx := context.Background()
	if _, err := ws.GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{}); err != nil {
		t.Fatal(err)
	}
	// Unimplemented, not refused: not reported.
	ws.PollWorkflowTaskQueue(ctx, &workflowservice.PollWorkflowTaskQueueRequest{TaskQueue: &taskqueuepb.TaskQueue{Name: "q"}})
	if len(got) != 0 {
		t.Fatalf("reported %v before any refusal", got)
	}
	_, err = ws.PollActivityTaskQueue(ctx, &workflowservice.PollActivityTaskQueueRequest{TaskQueue: &taskqueuepb.TaskQueue{Name: "ptopofl-site-a"}})
	if err == nil || len(got) != 1 || got[0].queue != "ptopofl-site-a" {
		t.Fatalf("refused poll: err %v, reported %v", err, got)
	}
	want := "PermissionDenied: Request unauthorized. (certificate ptopofl-site-b may poll only its own task queue, not ptopofl-site-a)"
	if r := Refusal(got[0].err); r != want {
		t.Errorf("Refusal: %q, want %q", r, want)
	}
}

// TestCertificateName reads the common name of a PEM certificate, skipping
// a key block before it, and names the file when there is none.
func TestCertificateName(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ptopofl-site-a"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.pem")
	os.WriteFile(path, append([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...), 0o644)
	if cn, err := CertificateName(path); err != nil || cn != "ptopofl-site-a" {
		t.Errorf("%q, %v", cn, err)
	}
	empty := filepath.Join(dir, "e.pem")
	os.WriteFile(empty, []byte("nothing"), 0o644)
	if _, err := CertificateName(empty); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("no certificate: %v", err)
	}
}
