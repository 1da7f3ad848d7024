package connect

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// pollMethods are the WorkflowService calls by which a worker asks for
// tasks.
var pollMethods = []string{"/PollActivityTaskQueue", "/PollWorkflowTaskQueue", "/PollNexusTaskQueue"}

// RefusedPolls is a gRPC dial option that calls refused each time the
// server refuses one of this client's polls for tasks (PermissionDenied or
// Unauthenticated), with the task queue polled and the server's error. The
// SDK treats such a refusal like a network error: it logs a warning now and
// then and polls again, forever, so a worker whose certificate may not
// poll its queue would look alive while it can never get work. The caller
// decides what a refusal means (cmd/worker exits).
func RefusedPolls(refused func(queue string, err error)) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil || !isPoll(method) {
			return err
		}
		if c := status.Code(err); c == codes.PermissionDenied || c == codes.Unauthenticated {
			queue := ""
			if r, ok := req.(interface{ GetTaskQueue() *taskqueuepb.TaskQueue }); ok {
				queue = r.GetTaskQueue().GetName()
			}
			refused(queue, err)
		}
		return err
	})
}

func isPoll(method string) bool {
	for _, m := range pollMethods {
		if strings.HasSuffix(method, m) {
			return true
		}
	}
	return false
}

// Refusal is the server's words for a refused call: the message and, for a
// PermissionDenied, the authorizer's reason, e.g. "Request unauthorized.
// (certificate ptopofl-site-b may poll only its own task queue, not
// ptopofl-site-a)".
func Refusal(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	msg := st.Message()
	if pd, ok := serviceerror.FromStatus(st).(*serviceerror.PermissionDenied); ok && pd.Reason != "" {
		msg += " (" + pd.Reason + ")"
	}
	return st.Code().String() + ": " + msg
}

// CertificateName is the common name of the first certificate in the PEM
// file path, the identity the Temporal frontend authorizes.
func CertificateName(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return "", fmt.Errorf("%s: no PEM certificate", path)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		return c.Subject.CommonName, nil
	}
}
