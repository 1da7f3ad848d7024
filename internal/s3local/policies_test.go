package s3local

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestForAccount checks the policy a site account is answered with: the
// statements whose principal can match its access key (versitygw's
// auth.Principals accepts "*", a string, a list, and {"AWS": string or
// list}), every statement whose principal it cannot read, and the other
// top-level fields unchanged.
func TestForAccount(t *testing.T) {
	policy := []byte(`{"Version":"2012-10-17","Id":"p","Statement":[
		{"Sid":"0","Effect":"Allow","Principal":{"AWS":["ptopofl-site.a"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/a/*"]},
		{"Sid":"1","Effect":"Allow","Principal":{"AWS":["ptopofl-site.b"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/b/*"]},
		{"Sid":"2","Effect":"Deny","Principal":"*","Action":["s3:PutObject"],"Resource":["arn:aws:s3:::b/x/*"]},
		{"Sid":"3","Effect":"Allow","Principal":{"AWS":"ptopofl-site.a"},"Action":["s3:PutObject"],"Resource":["arn:aws:s3:::b/a/*"]},
		{"Sid":"4","Effect":"Allow","Principal":["ptopofl-site.c","ptopofl-site.a"],"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/s/*"]},
		{"Sid":"5","Effect":"Allow","Principal":{"Service":"x"},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/y/*"]},
		{"Sid":"6","Effect":"Allow","Principal":"ptopofl-site.c","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/c/*"]}
	]}`)
	statements := splitStatements(policy)
	if len(statements) != 7 {
		t.Fatalf("split %d statements, want 7", len(statements))
	}
	cases := []struct {
		access string
		sids   []string
	}{
		0: {"ptopofl-site.a", []string{"0", "2", "3", "4", "5"}},
		1: {"ptopofl-site.b", []string{"1", "2", "5"}},
		2: {"ptopofl-site.c", []string{"2", "4", "5", "6"}},
		3: {"ptopofl-site.d", []string{"2", "5"}},
	}
	for i, tc := range cases {
		got := forAccount(policy, statements, tc.access)
		var doc struct {
			Version, Id string
			Statement   []struct{ Sid string }
		}
		if err := json.Unmarshal(got, &doc); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		var sids []string
		for _, st := range doc.Statement {
			sids = append(sids, st.Sid)
		}
		if !slices.Equal(sids, tc.sids) || doc.Version != "2012-10-17" || doc.Id != "p" {
			t.Errorf("%d: %s sees statements %v (Version %q, Id %q), want %v", i, tc.access, sids, doc.Version, doc.Id, tc.sids)
		}
	}

	// A policy none of whose statements applies keeps one (an empty
	// Statement array is not a policy), which grants nothing to the
	// account.
	only := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["ptopofl-site.b"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}]}`)
	got := forAccount(only, splitStatements(only), "ptopofl-site.a")
	var doc struct{ Statement []json.RawMessage }
	if err := json.Unmarshal(got, &doc); err != nil || len(doc.Statement) != 1 || mayApply(doc.Statement[0], "ptopofl-site.a") {
		t.Errorf("policy of an account no statement names: %s (%v)", got, err)
	}

	// Not a policy the splitter can read: nil, and the gateway gets it whole.
	if splitStatements([]byte(`{"Statement":{"Effect":"Allow"}}`)) != nil || splitStatements([]byte(`not json`)) != nil {
		t.Error("splitStatements accepted a policy without a Statement array")
	}
}
