package devstack

import (
	"context"
	"testing"

	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/authorization"
)

// TestSiteAuthorizer checks the per-site policy of authz.go call by call;
// every expected decision is the policy's text in authz.go.
func TestSiteAuthorizer(t *testing.T) {
	poll := func(q string) *workflowservice.PollActivityTaskQueueRequest {
		return &workflowservice.PollActivityTaskQueueRequest{Namespace: "default", TaskQueue: &taskqueuepb.TaskQueue{Name: q}}
	}
	cases := []struct {
		subject string // "" means no claims at all
		api     string
		req     any
		allow   bool
	}{
		0:  {"", "PollActivityTaskQueue", poll("ptopofl-site-a"), false},
		1:  {SiteCommonName("a"), "PollActivityTaskQueue", poll("ptopofl-site-a"), true},
		2:  {SiteCommonName("a"), "PollActivityTaskQueue", poll("ptopofl-site-b"), false},
		3:  {SiteCommonName("a"), "PollActivityTaskQueue", poll("ptopofl-server"), false},
		4:  {SiteCommonName("a"), "PollWorkflowTaskQueue", &workflowservice.PollWorkflowTaskQueueRequest{}, false},
		5:  {SiteCommonName("a"), "RespondActivityTaskCompleted", &workflowservice.RespondActivityTaskCompletedRequest{}, true},
		6:  {SiteCommonName("a"), "RecordActivityTaskHeartbeat", &workflowservice.RecordActivityTaskHeartbeatRequest{}, true},
		7:  {SiteCommonName("a"), "StartWorkflowExecution", &workflowservice.StartWorkflowExecutionRequest{}, false},
		8:  {SiteCommonName("a"), "GetWorkflowExecutionHistory", &workflowservice.GetWorkflowExecutionHistoryRequest{}, false},
		9:  {SiteCommonName("a"), "GetSystemInfo", &workflowservice.GetSystemInfoRequest{}, true},
		10: {ServerCommonName, "PollWorkflowTaskQueue", &workflowservice.PollWorkflowTaskQueueRequest{}, true},
		11: {StarterCommonName, "StartWorkflowExecution", &workflowservice.StartWorkflowExecutionRequest{}, true},
		12: {StackCommonName, "GetWorkflowExecutionHistory", &workflowservice.GetWorkflowExecutionHistoryRequest{}, true},
		13: {"someone-else", "GetSystemInfo", &workflowservice.GetSystemInfoRequest{}, false},
		14: {SiteCommonNamePrefix, "GetSystemInfo", &workflowservice.GetSystemInfoRequest{}, false},
	}
	for i, c := range cases {
		var claims *authorization.Claims
		if c.subject != "" {
			claims = &authorization.Claims{Subject: c.subject}
		}
		res, err := siteAuthorizer{}.Authorize(context.Background(), claims,
			&authorization.CallTarget{APIName: workflowService + c.api, Namespace: "default", Request: c.req})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got := res.Decision == authorization.DecisionAllow; got != c.allow {
			t.Errorf("case %d: %s calling %s: allowed %v, want %v (%s)", i, c.subject, c.api, got, c.allow, res.Reason)
		}
	}
	// The health check answers any verified certificate.
	res, _ := siteAuthorizer{}.Authorize(context.Background(), &authorization.Claims{Subject: SiteCommonName("a")},
		&authorization.CallTarget{APIName: "/grpc.health.v1.Health/Check"})
	if res.Decision != authorization.DecisionAllow {
		t.Errorf("health check denied to a site: %s", res.Reason)
	}
}

// TestParsePostgresURL checks the defaults and refusals of the
// --postgres-url syntax, and that URL gives back what it parsed.
func TestParsePostgresURL(t *testing.T) {
	cases := []struct {
		in      string
		want    PostgresDB
		wantErr bool
	}{
		0: {in: "postgres://u:p@127.0.0.1:5432/temporal", want: PostgresDB{Addr: "127.0.0.1:5432", User: "u", Password: "p", Database: "temporal", Visibility: PostgresVisibilityDatabase}},
		1: {in: "postgresql://u@db.example:5433", want: PostgresDB{Addr: "db.example:5433", User: "u", Database: PostgresDatabase, Visibility: PostgresVisibilityDatabase}},
		2: {in: "postgres://u:p@h:1/t1?visibility=v1", want: PostgresDB{Addr: "h:1", User: "u", Password: "p", Database: "t1", Visibility: "v1"}},
		3: {in: "mysql://u:p@h:1/t", wantErr: true},
		4: {in: "postgres://u:p@h/t", wantErr: true},              // no port
		5: {in: "postgres://h:1/t", wantErr: true},                // no user
		6: {in: "postgres://u@h:1/x?visibility=x", wantErr: true}, // one database for both
		7: {in: "postgres://u:p@127.0.0.1:5/t?sslmode=verify-full&sslrootcert=/c/ca.pem&sslcert=/c/d.pem&sslkey=/c/d-key.pem",
			want: PostgresDB{Addr: "127.0.0.1:5", User: "u", Password: "p", Database: "t", Visibility: PostgresVisibilityDatabase,
				TLSCA: "/c/ca.pem", TLSCert: "/c/d.pem", TLSKey: "/c/d-key.pem"}},
		8:  {in: "postgres://u:p@h:5/t?sslmode=verify-full&sslrootcert=/ca.pem", want: PostgresDB{Addr: "h:5", User: "u", Password: "p", Database: "t", Visibility: PostgresVisibilityDatabase, TLSCA: "/ca.pem"}},
		9:  {in: "postgres://u:p@h:5/t?sslmode=require&sslrootcert=/ca.pem", wantErr: true}, // would not check the server's name
		10: {in: "postgres://u:p@h:5/t?sslmode=verify-full", wantErr: true},                 // nothing to verify against
		11: {in: "postgres://u:p@h:5/t?sslrootcert=/ca.pem", wantErr: true},                 // TLS asked for without saying how
		12: {in: "postgres://u:p@h:5/t?sslmode=verify-full&sslrootcert=/ca.pem&sslcert=/c.pem", wantErr: true},
	}
	for i, c := range cases {
		got, err := ParsePostgresURL(c.in)
		if (err != nil) != c.wantErr {
			t.Fatalf("case %d: %q: err %v, want error %v", i, c.in, err, c.wantErr)
		}
		if c.wantErr {
			continue
		}
		if got != c.want {
			t.Errorf("case %d: %q parsed to %+v, want %+v", i, c.in, got, c.want)
		}
		if back, err := ParsePostgresURL(got.URL()); err != nil || back != got {
			t.Errorf("case %d: URL() %q parsed back to %+v (%v)", i, got.URL(), back, err)
		}
	}
}
