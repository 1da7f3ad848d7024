package devstack

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
)

// The per-site policy of the embedded Temporal server when it runs with
// mutual TLS (TemporalConfig.TLS). Clients are known by the common name of
// the certificate they present (the frontend has already verified it
// against the stack's CA):
//
//   - StackCommonName, ServerCommonName, StarterCommonName: every API.
//   - SiteCommonName(site): only what a site worker needs, and
//     PollActivityTaskQueue only on the task queue named like its
//     certificate, ptopofl-site-<site>. It cannot poll workflow tasks (which
//     carry every site's results), start, signal or read workflows.
//   - Any other name: nothing.
//
// deploy/temporal/README.md describes the same policy for a Temporal
// cluster that is not embedded.

const workflowService = "/temporal.api.workflowservice.v1.WorkflowService/"

// siteAPIs are the WorkflowService calls a site worker makes besides
// PollActivityTaskQueue: the SDK's start-up checks, activity results and
// heartbeats, and its shutdown.
var siteAPIs = map[string]bool{
	"GetSystemInfo":                true,
	"DescribeNamespace":            true,
	"GetClusterInfo":               true,
	"PollActivityTaskQueue":        true, // only on the site's own task queue, checked below
	"RespondActivityTaskCompleted": true,
	"RespondActivityTaskFailed":    true,
	"RespondActivityTaskCanceled":  true,
	"RecordActivityTaskHeartbeat":  true,
	"RecordWorkerHeartbeat":        true,
	"ShutdownWorker":               true,
}

// siteAuthorizer enforces the policy above.
type siteAuthorizer struct{}

// Authorize decides one call.
func (siteAuthorizer) Authorize(_ context.Context, c *authorization.Claims, t *authorization.CallTarget) (authorization.Result, error) {
	deny := func(reason string) (authorization.Result, error) {
		return authorization.Result{Decision: authorization.DecisionDeny, Reason: reason}, nil
	}
	allow := authorization.Result{Decision: authorization.DecisionAllow}
	if c == nil || c.Subject == "" {
		return deny("no client certificate")
	}
	if strings.HasPrefix(t.APIName, "/grpc.health.v1.Health/") {
		return allow, nil
	}
	switch c.Subject {
	case StackCommonName, ServerCommonName, StarterCommonName:
		return allow, nil
	}
	site, ok := strings.CutPrefix(c.Subject, SiteCommonNamePrefix)
	if !ok || site == "" {
		return deny("certificate " + c.Subject + " has no role here")
	}
	api, ok := strings.CutPrefix(t.APIName, workflowService)
	if !ok || !siteAPIs[api] {
		return deny("a site certificate may not call " + t.APIName)
	}
	if api == "PollActivityTaskQueue" {
		req, ok := t.Request.(*workflowservice.PollActivityTaskQueueRequest)
		if !ok {
			return deny("malformed PollActivityTaskQueue request")
		}
		if q := req.GetTaskQueue().GetName(); q != c.Subject {
			return deny("certificate " + c.Subject + " may poll only its own task queue, not " + q)
		}
	}
	return allow, nil
}

// certClaimMapper names the caller by its certificate's common name.
type certClaimMapper struct{}

// GetClaims maps the verified client certificate to its common name.
func (certClaimMapper) GetClaims(a *authorization.AuthInfo) (*authorization.Claims, error) {
	if a == nil || a.TLSSubject == nil || a.TLSSubject.CommonName == "" {
		return nil, errors.New("no client certificate")
	}
	return &authorization.Claims{Subject: a.TLSSubject.CommonName, AuthType: "mtls"}, nil
}

func newCertClaimMapper(*config.Config) authorization.ClaimMapper { return certClaimMapper{} }

// serverTLS is the server's TLS configuration for f: mutual TLS on the
// frontend (client certificates signed by f.CA required), f's certificate
// for the server's own calls to its frontend, and mutual TLS between the
// frontend, history and matching services with internode's certificate
// (internodeTLS), which no client of the stack holds.
func serverTLS(f TLSFiles, internode config.GroupTLS) config.RootTLS {
	client := config.ClientTLS{RootCAFiles: []string{f.CA}}
	return config.RootTLS{
		Internode: internode,
		Frontend: config.GroupTLS{
			Server: config.ServerTLS{CertFile: f.Cert, KeyFile: f.Key, ClientCAFiles: []string{f.CA}, RequireClientAuth: true},
			Client: client,
		},
		SystemWorker: config.WorkerTLS{CertFile: f.Cert, KeyFile: f.Key, Client: client},
	}
}
