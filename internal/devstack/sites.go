package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/s3local"
	"github.com/ptopofl/ptopofl/internal/secretfile"
	"github.com/ptopofl/ptopofl/store"
)

// Site isolation in the local stack. Every site has an S3 account derived
// from the root secret (s3local.SiteCredentials), so a site first named
// when its worker starts needs no account to be created; what the account
// may do is granted by the bucket policy, one pair of statements per site
// (SiteBucketPolicy), added by GrantSites before the site's worker starts.
// The server worker and the starter keep the root account: full access.

// PolicyDocument is an S3 policy: an identity policy (no Principal) or a
// bucket policy.
type PolicyDocument struct {
	Version   string            `json:"Version"`
	Statement []PolicyStatement `json:"Statement"`
}

// PolicyStatement is one statement of a PolicyDocument.
type PolicyStatement struct {
	Effect    string           `json:"Effect"`
	Principal *PolicyPrincipal `json:"Principal,omitempty"`
	Action    []string         `json:"Action"`
	Resource  []string         `json:"Resource"`
}

// PolicyPrincipal names the accounts a bucket policy statement applies to.
type PolicyPrincipal struct {
	AWS []string `json:"AWS"`
}

const policyVersion = "2012-10-17"

// SiteIdentityPolicy is the policy of site's S3 identity over bucket: read
// artifact.SiteReadPatterns, write artifact.SiteWritePatterns, nothing
// else (no listing, no deletes, nothing at the bucket level). It is the
// policy deploy/temporal/README.md gives each site's user; a test holds
// the two equal.
func SiteIdentityPolicy(bucket, site string) PolicyDocument {
	return PolicyDocument{Version: policyVersion, Statement: siteStatements(bucket, site, nil)}
}

func siteStatements(bucket, site string, principal *PolicyPrincipal) []PolicyStatement {
	arns := func(patterns []string) []string {
		out := make([]string, len(patterns))
		for i, p := range patterns {
			out[i] = "arn:aws:s3:::" + bucket + "/" + p
		}
		return out
	}
	return []PolicyStatement{
		{Effect: "Allow", Principal: principal, Action: []string{"s3:GetObject"}, Resource: arns(artifact.SiteReadPatterns(site))},
		{Effect: "Allow", Principal: principal, Action: []string{"s3:PutObject"}, Resource: arns(artifact.SiteWritePatterns(site))},
	}
}

// SiteBucketPolicy is the bucket policy that grants each of sites (sorted,
// without repeats) its SiteIdentityPolicy, the principal being the site's
// local account (s3local.SiteCredentials). The root account is not in it:
// versitygw lets root do anything.
func SiteBucketPolicy(bucket string, sites []string) PolicyDocument {
	doc := PolicyDocument{Version: policyVersion}
	for _, site := range sortedUnique(sites) {
		access, _ := s3local.SiteCredentials("", site) // the access key does not depend on the secret
		doc.Statement = append(doc.Statement, siteStatements(bucket, site, &PolicyPrincipal{AWS: []string{access}})...)
	}
	return doc
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// policySites are the sites a bucket policy written by GrantSites grants.
func policySites(policy string) ([]string, error) {
	if policy == "" {
		return nil, nil
	}
	var doc PolicyDocument
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		return nil, fmt.Errorf("parse bucket policy: %w", err)
	}
	var sites []string
	for _, st := range doc.Statement {
		if st.Principal == nil {
			continue
		}
		for _, p := range st.Principal.AWS {
			if site, ok := strings.CutPrefix(p, s3local.SiteAccessPrefix); ok {
				sites = append(sites, site)
			}
		}
	}
	return sortedUnique(sites), nil
}

// GrantSites adds sites to the bucket policy of root's bucket, keeping the
// sites it already grants; root must hold the root credentials. Granting
// sites already granted changes nothing, unless the stored policy's
// statements are not those SiteBucketPolicy gives today: a policy an older
// binary wrote (one that let every site read every cluster model and the
// server state, before sites read only their own objects) is rewritten
// with the current patterns, for the sites it granted; GrantSites with no
// sites does only that, as the stack does when it starts. Two processes
// granting different sites at the same instant can lose one grant (read,
// then write); the starter grants a campaign's sites before starting their
// workers, and a denied site's activity fails with AccessDenied and is
// retried, so grant again and it carries on.
func GrantSites(ctx context.Context, root *store.Store, sites []string) error {
	for _, s := range sites {
		if err := artifact.ValidateName(s); err != nil {
			return fmt.Errorf("grant site %q: %w", s, err)
		}
	}
	cur, err := root.BucketPolicy(ctx)
	if err != nil {
		return err
	}
	have, err := policySites(cur)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", root.Bucket(), err)
	}
	all := sortedUnique(append(slices.Clone(have), sites...))
	if len(all) == 0 {
		return nil
	}
	want := SiteBucketPolicy(root.Bucket(), all)
	if slices.Equal(all, have) && samePolicy(cur, want) {
		return nil
	}
	b, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("bucket policy: %w", err)
	}
	return root.SetBucketPolicy(ctx, string(b))
}

// samePolicy reports whether the stored policy document cur says what want
// says, statement for statement (the server may store the JSON with other
// spacing).
func samePolicy(cur string, want PolicyDocument) bool {
	var got PolicyDocument
	if err := json.Unmarshal([]byte(cur), &got); err != nil {
		return false
	}
	return reflect.DeepEqual(got, want)
}

// SiteCredentialsFile is the file, in the stack's data directory dir, with
// site's S3 credentials (PTOPOFL_S3_ACCESS_KEY, PTOPOFL_S3_SECRET_KEY).
func SiteCredentialsFile(dir, site string) string {
	return filepath.Join(dir, SitesDir, site+".env")
}

// SiteStores grants sites in the bucket policy of the stack at ep (GrantSites),
// writes each site's credentials to SiteCredentialsFile, for a site worker
// started outside this process, and returns a store per site over the
// stack's bucket with that site's credentials. rootAccess and rootSecret
// are the stack's root credentials.
func SiteStores(ctx context.Context, ep Endpoints, rootAccess, rootSecret string, sites []string) (map[string]*store.Store, error) {
	root, err := store.New(store.Config{Endpoint: ep.S3URL, Bucket: ep.Bucket, AccessKey: rootAccess, SecretKey: rootSecret, Region: ep.S3Region, ReadsAll: true,
		CAFile: ep.TLSCA, ClientCertFile: ep.TLSCert, ClientKeyFile: ep.TLSKey})
	if err != nil {
		return nil, fmt.Errorf("local stack: %w", err)
	}
	if err := GrantSites(ctx, root, sites); err != nil {
		return nil, fmt.Errorf("local stack: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(ep.DataDir, SitesDir), 0o700); err != nil {
		return nil, fmt.Errorf("local stack: %w", err)
	}
	out := make(map[string]*store.Store, len(sites))
	for _, site := range sites {
		ak, sk := s3local.SiteCredentials(rootSecret, site)
		path := SiteCredentialsFile(ep.DataDir, site)
		content := fmt.Sprintf("# S3 credentials of site %s on the local stack: its own artifacts only. Give it to the site's worker with --s3-credentials-file (or PTOPOFL_S3_CREDENTIALS_FILE)\n%s=%s\n%s=%s\n",
			site, store.EnvAccessKey, ak, store.EnvSecretKey, sk)
		if err := secretfile.Write(path, []byte(content)); err != nil {
			return nil, fmt.Errorf("local stack: write credentials of site %s: %w", site, err)
		}
		// What the site's identity may read, for the process's shared
		// artifact cache: exactly what the bucket policy lets it read.
		site := site
		st, err := store.New(store.Config{Endpoint: ep.S3URL, Bucket: ep.Bucket, AccessKey: ak, SecretKey: sk, Region: ep.S3Region,
			CAFile: ep.TLSCA, ClientCertFile: ep.TLSCert, ClientKeyFile: ep.TLSKey,
			CanRead: func(key string) bool { return artifact.SiteMayRead(site, key) }})
		if err != nil {
			return nil, fmt.Errorf("local stack: store of site %s: %w", site, err)
		}
		out[site] = st
	}
	return out, nil
}

// GrantLiveSites grants sites on the stack another process serves over the
// absolute data directory dir (SiteStores) and returns the credentials file
// of each, in order: how a site worker started by hand, whose name the
// stack has never heard, gets its own S3 identity.
func GrantLiveSites(ctx context.Context, dir string, sites []string) ([]string, error) {
	ep, ok := liveStack(ctx, dir)
	if !ok {
		return nil, fmt.Errorf("local stack: no running stack serves %s (start it with devstack --data %s)", dir, dir)
	}
	ak, sk, err := ReadCredentials(ep.CredentialsFile)
	if err != nil {
		return nil, err
	}
	if _, err := SiteStores(ctx, ep, ak, sk, sites); err != nil {
		return nil, err
	}
	paths := make([]string, len(sites))
	for i, s := range sites {
		paths[i] = SiteCredentialsFile(dir, s)
	}
	return paths, nil
}
