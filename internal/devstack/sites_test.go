package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/s3local"
	"github.com/ptopofl/ptopofl/store"
)

func accessDenied(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.Code == "AccessDenied"
}

// isoRootAK and isoRootSK are the root account of the isolation tests' S3
// server.
const isoRootAK, isoRootSK = "root-access", "root-secret-0123456789"

// startIsoS3 starts the embedded S3 server over a temporary directory with
// the root account, stopped when the test ends, and returns it, the
// endpoints of bucket "iso" on it (DataDir the directory) and the root's
// store, with the bucket made.
func startIsoS3(t *testing.T) (*s3local.Server, Endpoints, *store.Store) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	srv, err := s3local.Start(ctx, s3local.Config{Dir: filepath.Join(dir, "s3"), AccessKey: isoRootAK, SecretKey: isoRootSK})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	ep := Endpoints{S3URL: srv.URL(), S3Region: s3local.Region, Bucket: "iso", DataDir: dir}
	root, err := store.New(store.Config{Endpoint: ep.S3URL, Bucket: ep.Bucket, AccessKey: isoRootAK, SecretKey: isoRootSK, Region: ep.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	if err := root.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	return srv, ep, root
}

// TestSiteIsolation runs the embedded S3 server with the site accounts and
// the bucket policy of GrantSites and checks, request by request, what site
// "a" may do: read and write its own descriptor and model, read what is
// sent to it, and nothing of site "b" (read or write) or of the server's
// records. A site the policy does not name may do nothing; a wrong secret
// is refused; the server's root account keeps full access.
func TestSiteIsolation(t *testing.T) {
	ctx := context.Background()
	srv, ep, root := startIsoS3(t)
	dir := ep.DataDir
	var err error
	const c = "camp"
	keys := map[string]string{
		"a descriptor":  artifact.DescriptorKey(c, 1, "a"),
		"a model":       artifact.ModelKey(c, 1, "a"),
		"a state":       artifact.SiteStateKey(c, 1, "a"),
		"b descriptor":  artifact.DescriptorKey(c, 1, "b"),
		"b model":       artifact.ModelKey(c, 1, "b"),
		"b state":       artifact.SiteStateKey(c, 1, "b"),
		"b control":     artifact.ControlKey(c, 1, "b"),
		"global model":  artifact.AggregateKey(c, 1, "global"),
		"cluster model": artifact.AggregateKey(c, 1, "cluster-0"),
		"a personal":    artifact.AggregateKey(c, 1, "a"),
		"b personal":    artifact.AggregateKey(c, 1, "b"),
		"spec":          artifact.SpecKey(c),
		"server state":  artifact.ServerStateKey(c, 1),
		"shared state":  artifact.SharedStateKey(c, 1),
		"manifest":      artifact.ManifestKey(c, 1),
		"clustering":    artifact.ClusteringKey(c, 1),
		"sweep spec":    artifact.SweepSpecKey("s"),
	}
	for what, key := range keys {
		if _, err := root.Put(ctx, key, []byte(what)); err != nil {
			t.Fatalf("root writes %s: %v", what, err)
		}
	}
	if err := GrantSites(ctx, root, []string{"b", "a"}); err != nil {
		t.Fatal(err)
	}
	stores, err := SiteStores(ctx, ep, isoRootAK, isoRootSK, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	a := stores["a"]

	cases := []struct {
		what        string
		read, write bool
	}{
		0:  {"a descriptor", true, true},
		1:  {"a model", true, true},
		2:  {"a state", true, true},
		3:  {"b descriptor", false, false},
		4:  {"b model", false, false},
		5:  {"b state", false, false},
		6:  {"b control", false, false},
		7:  {"global model", true, false},
		8:  {"cluster model", false, false}, // of a campaign written before per-site aggregates
		9:  {"a personal", true, false},
		10: {"b personal", false, false},
		11: {"spec", true, false},
		12: {"server state", false, false}, // FoolsGold's per-site histories
		13: {"manifest", false, false},
		14: {"clustering", false, false},
		15: {"sweep spec", false, false},
		16: {"shared state", true, false}, // SCAFFOLD's control variate
	}
	for i, tc := range cases {
		key := keys[tc.what]
		_, got, err := a.GetKey(ctx, key)
		switch {
		case tc.read && (err != nil || string(got) != tc.what):
			t.Errorf("%d: site a reads %s: %q, %v; want it allowed", i, tc.what, got, err)
		case !tc.read && !accessDenied(err):
			t.Errorf("%d: site a reads %s: %q, %v; want AccessDenied", i, tc.what, got, err)
		}
		_, err = a.Put(ctx, key, []byte("written by a"))
		switch {
		case tc.write && err != nil:
			t.Errorf("%d: site a writes %s: %v; want it allowed", i, tc.what, err)
		case !tc.write && !accessDenied(err):
			t.Errorf("%d: site a writes %s: %v; want AccessDenied", i, tc.what, err)
		}
	}
	if _, err := a.List(ctx, "campaigns/"); !accessDenied(err) {
		t.Errorf("site a lists the bucket: %v, want AccessDenied", err)
	}
	if err := a.SetBucketPolicy(ctx, `{"Version":"2012-10-17","Statement":[]}`); err == nil {
		t.Error("site a replaced the bucket policy")
	}
	// Root still reads b's model, untouched by a's attempt.
	if _, got, err := root.GetKey(ctx, keys["b model"]); err != nil || string(got) != "b model" {
		t.Errorf("root reads b's model: %q, %v", got, err)
	}

	// A site the policy does not name: a valid account, but no rights.
	ak, sk := s3local.SiteCredentials(isoRootSK, "c")
	cst, err := store.New(store.Config{Endpoint: ep.S3URL, Bucket: ep.Bucket, AccessKey: ak, SecretKey: sk, Region: ep.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cst.Put(ctx, artifact.ModelKey(c, 1, "c"), []byte("x")); !accessDenied(err) {
		t.Errorf("ungranted site c writes its model: %v, want AccessDenied", err)
	}
	// a's access key with another secret.
	forged, err := store.New(store.Config{Endpoint: ep.S3URL, Bucket: ep.Bucket, AccessKey: s3local.SiteAccessPrefix + "a", SecretKey: "guessed-secret-0123456789", Region: ep.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := forged.GetKey(ctx, keys["a model"]); err == nil {
		t.Error("a forged secret read site a's model")
	}

	// Granting again changes nothing; granting c keeps a and b.
	before, err := root.BucketPolicy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := GrantSites(ctx, root, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := root.BucketPolicy(ctx); again != before {
		t.Error("granting a granted site rewrote the policy")
	}
	if err := GrantSites(ctx, root, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	cur, _ := root.BucketPolicy(ctx)
	if sites, err := policySites(cur); err != nil || strings.Join(sites, ",") != "a,b,c" {
		t.Errorf("policy grants %v (%v), want a,b,c", sites, err)
	}
	// The server answers a site's requests from the policy as that site
	// sees it, prepared once per policy version: c, denied above, may
	// write its model as soon as the new policy is stored.
	if _, err := cst.Put(ctx, artifact.ModelKey(c, 1, "c"), []byte("x")); err != nil {
		t.Errorf("site c writes its model once granted: %v", err)
	}

	// 200 sites' grants (about 200 KB of policy; an extended attribute of
	// the bucket directory would hold a few KiB) and site a still works.
	many := make([]string, 200)
	for i := range many {
		many[i] = fmt.Sprintf("site-%03d", i)
	}
	if err := GrantSites(ctx, root, many); err != nil {
		t.Fatalf("grant 200 sites: %v", err)
	}
	if _, got, err := a.GetKey(ctx, keys["a model"]); err != nil || len(got) == 0 {
		t.Errorf("site a reads its model after 200 more grants: %v", err)
	}
	if _, _, err := a.GetKey(ctx, keys["b model"]); !accessDenied(err) {
		t.Errorf("site a reads b's model after 200 more grants: %v, want AccessDenied", err)
	}

	// The process's shared artifact cache answers a site only what the
	// policy lets it read: with the server down, site a still gets the
	// global model root wrote through the cache, and never b's model,
	// cached by root just the same.
	globalRef, err := root.PutCached(ctx, artifact.AggregateKey(c, 2, "global"), []byte("global 2"))
	if err != nil {
		t.Fatal(err)
	}
	bRef, err := root.PutCached(ctx, artifact.ModelKey(c, 2, "b"), []byte("b model 2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetCached(ctx, bRef); !accessDenied(err) {
		t.Errorf("site a reads b's cached model: %v, want AccessDenied", err)
	}
	addr := srv.Addr()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetCached(ctx, globalRef); err != nil || string(got) != "global 2" {
		t.Errorf("site a reads the cached global model with S3 down: %q, %v", got, err)
	}
	if _, err := a.GetCached(ctx, bRef); err == nil {
		t.Error("site a read b's cached model with S3 down")
	}

	// The grants outlive a restart of the server (they are files beside
	// its data directory).
	srv, err = s3local.Start(ctx, s3local.Config{Dir: filepath.Join(dir, "s3"), Addr: addr, AccessKey: isoRootAK, SecretKey: isoRootSK})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	if _, got, err := a.GetKey(ctx, keys["a model"]); err != nil || len(got) == 0 {
		t.Errorf("site a reads its model after a restart: %v", err)
	}
	if _, _, err := a.GetKey(ctx, keys["b model"]); !accessDenied(err) {
		t.Errorf("site a reads b's model after a restart: %v, want AccessDenied", err)
	}

	// The credentials file works for a worker started elsewhere.
	path := SiteCredentialsFile(dir, "a")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file of site a: %v, %v; want mode 0600", fi, err)
	}
	fak, fsk, err := ReadCredentials(path)
	if err != nil || fak != s3local.SiteAccessPrefix+"a" || fsk == isoRootSK {
		t.Errorf("credentials file of site a: %s, %v", fak, err)
	}
}

// TestGrantSitesRefreshesOldPolicy stores the bucket policy an older
// binary wrote (every site may also read every cluster model and the
// server state) and starts from there: the old policy lets site a read a
// cluster model and the server state; GrantSites, with no new site (as the
// stack calls it when it starts) or with one, rewrites it with today's
// patterns for the same sites, after which both are denied and a's own
// objects still readable; a policy already current is left alone.
func TestGrantSitesRefreshesOldPolicy(t *testing.T) {
	ctx := context.Background()
	_, ep, root := startIsoS3(t)
	const c = "camp"
	cluster, serverState, own := artifact.AggregateKey(c, 1, "cluster-0"), artifact.ServerStateKey(c, 1), artifact.AggregateKey(c, 1, "a")
	for _, k := range []string{cluster, serverState, own} {
		if _, err := root.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	old := SiteBucketPolicy(ep.Bucket, []string{"a", "b"})
	for i, st := range old.Statement {
		if slices.Contains(st.Action, "s3:GetObject") {
			old.Statement[i].Resource = append(st.Resource,
				"arn:aws:s3:::"+ep.Bucket+"/campaigns/*/round-*/aggregate/cluster-*.parquet",
				"arn:aws:s3:::"+ep.Bucket+"/campaigns/*/round-*/server-state.parquet")
		}
	}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := root.SetBucketPolicy(ctx, string(b)); err != nil {
		t.Fatal(err)
	}
	ak, sk := s3local.SiteCredentials(isoRootSK, "a")
	a, err := store.New(store.Config{Endpoint: ep.S3URL, Bucket: ep.Bucket, AccessKey: ak, SecretKey: sk, Region: ep.S3Region})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{cluster, serverState} {
		if _, _, err := a.GetKey(ctx, k); err != nil {
			t.Fatalf("under the old policy site a reads %s: %v (the test would prove nothing)", k, err)
		}
	}
	if err := GrantSites(ctx, root, nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{cluster, serverState} {
		if _, _, err := a.GetKey(ctx, k); !accessDenied(err) {
			t.Errorf("after the refresh site a reads %s: %v, want AccessDenied", k, err)
		}
	}
	if _, _, err := a.GetKey(ctx, own); err != nil {
		t.Errorf("after the refresh site a reads its own aggregate: %v", err)
	}
	cur, err := root.BucketPolicy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !samePolicy(cur, SiteBucketPolicy(ep.Bucket, []string{"a", "b"})) {
		t.Errorf("refreshed policy %s, want SiteBucketPolicy for a and b", cur)
	}
	if err := GrantSites(ctx, root, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := root.BucketPolicy(ctx); again != cur {
		t.Error("a current policy was rewritten")
	}
}

// TestDeployPolicyMatches holds the per-site policy that the deployment
// guide prints equal to SiteIdentityPolicy, the policy the local stack
// enforces.
func TestDeployPolicyMatches(t *testing.T) {
	b, err := os.ReadFile("../../deploy/temporal/README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- site-policy: bucket ptopofl, site hospital-a -->"
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("README has no %q", marker)
	}
	_, rest, ok = strings.Cut(rest, "```json\n")
	if !ok {
		t.Fatal("no ```json block after the marker")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("unterminated json block")
	}
	var got PolicyDocument
	if err := json.Unmarshal([]byte(block), &got); err != nil {
		t.Fatalf("README policy: %v", err)
	}
	if want := SiteIdentityPolicy("ptopofl", "hospital-a"); !reflect.DeepEqual(got, want) {
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("README policy differs from SiteIdentityPolicy; want\n%s", w)
	}

	// The policy files the compose set-up attaches to its site users.
	files, err := filepath.Glob("../../deploy/temporal/policies/site-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/temporal/policies/site-*.json: %v", err)
	}
	for _, f := range files {
		site := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "site-"), ".json")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var got PolicyDocument
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !reflect.DeepEqual(got, SiteIdentityPolicy("ptopofl", site)) {
			t.Errorf("%s differs from SiteIdentityPolicy(ptopofl, %s)", f, site)
		}
	}
}

// TestSiteIsolationConcurrent has 18 sites whose names are all as long
// as each other write their own models, and try another's, at the same
// time through one server. The server answers each site from the policy
// as that site sees it, cached by access key; versitygw hands the key over
// in memory it reuses for later requests, and a cache keyed by it without
// a copy gave sites each other's policies (a third of these writes were
// denied, and a site could have been granted another's).
func TestSiteIsolationConcurrent(t *testing.T) {
	ctx := context.Background()
	_, ep, _ := startIsoS3(t)
	var sites []string
	for i := 0; i < 9; i++ {
		sites = append(sites, fmt.Sprintf("hc-site%d", i), fmt.Sprintf("bm-site%d", i))
	}
	stores, err := SiteStores(ctx, ep, isoRootAK, isoRootSK, sites)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 15
	var wg sync.WaitGroup
	errs := make(chan string, 2*rounds*len(sites))
	for i, site := range sites {
		other := sites[(i+1)%len(sites)]
		st := stores[site]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				if _, err := st.Put(ctx, artifact.ModelKey("c", r, site), []byte(site)); err != nil {
					errs <- fmt.Sprintf("site %s writes its round-%d model: %v", site, r, err)
				}
				if _, err := st.Put(ctx, artifact.ModelKey("c", r, other), []byte(site)); !accessDenied(err) {
					errs <- fmt.Sprintf("site %s writes %s's round-%d model: %v, want AccessDenied", site, other, r, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 5 {
			t.Error(e)
		}
	}
	if n > 5 {
		t.Errorf("… and %d more", n-5)
	}
}
