package workers_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// spanTolerance is the relative residual ‖t − Pt‖/‖t‖ below which a
// vector t counts as determined by the readable vectors P projects onto.
// The two-cluster solve of the old layout leaves about 1e-16 here (it is
// exact algebra, rounded once); vectors an attacker cannot determine are
// off by percents (two sites' local models of one round, trained from the
// same start, differ by a few percent of their norm).
const spanTolerance = 1e-6

// minLeakLen is the shortest vector the span test compares: a vector of
// one or two numbers (a trust score, a drift) is in the span of any two
// readable vectors of its length, which would say nothing.
const minLeakLen = 3

// namedVector is one vector of one object: the object's key, the vector's
// name in it, the record's site, and the values.
type namedVector struct {
	key, name, site string
	v               []float64
}

func (n namedVector) String() string { return n.key + "#" + n.name }

// vectorsOf decodes every vector of a parquet object (every object of a
// round is in the vector layout, store.DecodeVectors) and returns them;
// JSON objects (the spec, manifests) hold none.
func vectorsOf(t *testing.T, key string, b []byte) []namedVector {
	t.Helper()
	if !strings.HasSuffix(key, ".parquet") {
		return nil
	}
	recs, err := store.DecodeVectors(b)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	var out []namedVector
	for _, r := range recs {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range r.Vectors {
				if !yield(n) {
					return
				}
			}
		}) {
			out = append(out, namedVector{key: key, name: name, site: r.Site, v: r.Vectors[name]})
		}
	}
	return out
}

// ownerOf returns the site a vector belongs to: the site whose name an
// object it uploaded carries (descriptors, models, state, control, init),
// or the site a per-site vector of a server object is kept for (a
// FoolsGold history "foolsgold/<site>" of the server state, a row of the
// clustering). What the server sends a site (aggregate/) belongs to no
// single site: it is made from several (the global model, a cluster's
// blend), or it is the site's own model under local training, which its
// models/ object already holds.
func ownerOf(campaign string, nv namedVector, sites []string) string {
	_, folder, ok := artifact.RoundFolder(campaign, nv.key)
	if !ok {
		return ""
	}
	switch folder {
	case "descriptors", "models", "state", "control", "init":
		base := nv.key[strings.LastIndex(nv.key, "/")+1:]
		return strings.TrimSuffix(base, ".parquet")
	case "":
		if site, ok := strings.CutPrefix(nv.name, "foolsgold/"); ok {
			return site
		}
		if strings.HasSuffix(nv.key, "/clustering.parquet") && slices.Contains(sites, nv.site) {
			return nv.site
		}
	}
	return ""
}

// residual is ‖t − P t‖/‖t‖ for P the orthogonal projection onto the span
// of basis (Gram–Schmidt, twice for stability), and the coefficients of t
// in basis's orthonormalised vectors are never needed: only whether some
// weights, public or not, give t back.
func residual(t []float64, basis ...[]float64) float64 {
	var q [][]float64
	for _, b := range basis {
		w := slices.Clone(b)
		for range 2 {
			for _, e := range q {
				d := dot(e, w)
				for i := range w {
					w[i] -= d * e[i]
				}
			}
		}
		if n := math.Sqrt(dot(w, w)); n > 1e-12*math.Sqrt(dot(b, b)) && n > 0 {
			for i := range w {
				w[i] /= n
			}
			q = append(q, w)
		}
	}
	r := slices.Clone(t)
	for range 2 {
		for _, e := range q {
			d := dot(e, r)
			for i := range r {
				r[i] -= d * e[i]
			}
		}
	}
	return math.Sqrt(dot(r, r)) / math.Sqrt(dot(t, t))
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// leak is one thing an attacker found: another site's vector held by, or
// determined by, what it read.
type leak struct {
	secret   namedVector
	owner    string
	from     []namedVector
	residual float64
	what     string
}

func (l leak) String() string {
	from := make([]string, len(l.from))
	for i, f := range l.from {
		from[i] = f.String()
	}
	return fmt.Sprintf("%s of %s %s [%s] (relative residual %.2g)", l.secret, l.owner, l.what, strings.Join(from, ", "), l.residual)
}

// findLeaks is the attacker: from the vectors a site read, it looks for any
// vector of another site (secrets, by owner) held by an object it read
// (a record or a vector named after another site, or a readable vector
// equal up to scale to a secret) or determined by two of them (a secret in
// the span of two readable vectors: the two-cluster solve, where two
// blended cluster models give back a lone site's model with the public β
// and cluster sizes). Vectors shorter than minLeakLen are not compared.
func findLeaks(attacker string, sites []string, readable []namedVector, secrets map[string][]namedVector) []leak {
	var out []leak
	for _, r := range readable {
		for _, other := range sites {
			if other == attacker {
				continue
			}
			if r.site == other || strings.HasSuffix(r.name, "/"+other) {
				out = append(out, leak{secret: r, owner: other, from: []namedVector{r}, what: "is named after it in"})
			}
		}
	}
	for _, owner := range sites {
		if owner == attacker {
			continue
		}
		for _, s := range secrets[owner] {
			if len(s.v) < minLeakLen || dot(s.v, s.v) == 0 {
				continue
			}
			var cands []namedVector
			for _, r := range readable {
				if len(r.v) == len(s.v) {
					cands = append(cands, r)
				}
			}
			found := false
			for i := 0; i < len(cands) && !found; i++ {
				if res := residual(s.v, cands[i].v); res < spanTolerance {
					out = append(out, leak{secret: s, owner: owner, from: cands[i : i+1], residual: res, what: "is (a multiple of) a vector read:"})
					found = true
				}
			}
			for i := 0; i < len(cands) && !found; i++ {
				for j := i + 1; j < len(cands) && !found; j++ {
					if res := residual(s.v, cands[i].v, cands[j].v); res < spanTolerance {
						out = append(out, leak{secret: s, owner: owner, from: []namedVector{cands[i], cands[j]}, residual: res, what: "is determined by two vectors read:"})
						found = true
					}
				}
			}
		}
	}
	return out
}

// TestSiteReadsOnlyItsOwn runs a 2-round campaign of every method on the
// README's federation (gendata healthcare --seed 42: eight hospitals,
// where pTopoFL puts site5 alone in a cluster) on the local stack, every
// site worker with its own S3 identity. Then, as each site in turn, over
// real HTTP with that site's credentials, it lists the bucket (denied) and
// tries every key the campaigns left (listed by the root account), and
// holds what the site could read to this:
//   - of aggregate/, only "global" and the site's own name;
//   - no object holds a record or a vector named after another site, and
//     no vector of another site (its descriptors, models, state, control
//     updates, its row of a clustering, its FoolsGold history) is equal up
//     to scale to a vector read or in the span of two of them;
//   - except what a method defines as public: a robust aggregation that
//     selects one site's model (Krum; FoolsGold when its weights leave one
//     site) sends that model to everyone as the global model.
//
// Then "old-layout" gives the same attacker what the read policy granted
// before sites read only their own (every cluster model, the server
// state): it must find site5's model from two cluster models, and
// FoolsGold's histories, which shows the test bites.
func TestSiteReadsOnlyItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs a campaign of every method")
	}
	fedDir := t.TempDir()
	fed, err := eval.Healthcare(eval.DefaultHealthcareOptions(42))
	if err != nil {
		t.Fatal(err)
	}
	if err := dataset.WriteFederation(fedDir, fed); err != nil {
		t.Fatal(err)
	}
	s := startStackAt(t, fedDir)
	var sites []pipeline.Site
	var names []string
	for _, site := range fed.Sites {
		sites = append(sites, pipeline.Site{Name: site.Name})
		names = append(names, site.Name)
	}
	startWorkers(t, s, sites)
	ctx := context.Background()

	const rounds = 2
	campaigns := map[learn.Method]string{}
	start := time.Now()
	for _, m := range learn.Methods {
		spec := pipeline.CampaignSpec{
			Campaign: "own-" + string(m), Method: m, Preset: method.Default, Rounds: rounds, Seed: 42,
			Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: method.Defaults(method.Default),
		}.WithDefaults()
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.store.PutJSON(ctx, artifact.SpecKey(spec.Campaign), spec); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		run, err := s.client.ExecuteWorkflow(cctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
			pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
		if err == nil {
			err = run.Get(cctx, nil)
		}
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		campaigns[m] = spec.Campaign
	}
	t.Logf("%d campaigns of %d rounds in %v", len(campaigns), rounds, time.Since(start).Round(time.Millisecond))

	// Everything the campaigns left, as the server sees it.
	keys, err := s.store.List(ctx, "campaigns/")
	if err != nil {
		t.Fatal(err)
	}
	all := map[string][]byte{}
	for _, k := range keys {
		_, b, err := s.store.GetKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		all[k] = b
	}
	// public[campaign][key of a readable vector] = key of the site model a
	// robust aggregation sent everyone as its global model.
	public := map[string]map[string]string{}
	for m, c := range campaigns {
		public[c] = map[string]string{}
		for r := 1; r <= rounds; r++ {
			var man pipeline.RoundManifest
			if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(c, r), &man); err != nil {
				t.Fatal(err)
			}
			var chosen []string
			for _, w := range man.SiteWeights {
				if w.Weight != 0 {
					chosen = append(chosen, w.Site)
				}
			}
			if len(chosen) == 1 && len(man.SiteWeights) > 1 {
				public[c][artifact.AggregateKey(c, r, artifact.GlobalTarget)] = artifact.ModelKey(c, r, chosen[0])
				t.Logf("%s round %d: the global model is %s's model (%s selects one site)", c, r, chosen[0], m)
			}
		}
	}
	if len(public[campaigns[learn.Krum]]) != rounds {
		t.Errorf("Krum's manifests select one site in %d rounds, want %d", len(public[campaigns[learn.Krum]]), rounds)
	}
	secretsOf := func(c string) map[string][]namedVector {
		out := map[string][]namedVector{}
		for _, k := range keys {
			if !strings.HasPrefix(k, artifact.CampaignPrefix(c)) {
				continue
			}
			for _, nv := range vectorsOf(t, k, all[k]) {
				if owner := ownerOf(c, nv, names); owner != "" {
					out[owner] = append(out[owner], nv)
				}
			}
		}
		return out
	}

	readBy := map[string]map[string]bool{} // site → keys it read
	for _, site := range names {
		st := siteStore(t, s, site)
		if _, err := st.List(ctx, "campaigns/"); !accessDenied(err) {
			t.Errorf("%s lists the bucket: %v, want AccessDenied", site, err)
		}
		readBy[site] = map[string]bool{}
		for _, k := range keys {
			_, b, err := st.GetKey(ctx, k)
			switch {
			case err == nil:
				readBy[site][k] = true
				if string(b) != string(all[k]) {
					t.Fatalf("%s reads other bytes at %s than the root account", site, k)
				}
			case !accessDenied(err):
				t.Fatalf("%s reads %s: %v", site, k, err)
			}
		}
	}

	for _, m := range learn.Methods {
		c := campaigns[m]
		t.Run(string(m), func(t *testing.T) {
			secrets := secretsOf(c)
			readKeys := 0
			for _, site := range names {
				var readable []namedVector
				for _, k := range keys {
					if !strings.HasPrefix(k, artifact.CampaignPrefix(c)) || !readBy[site][k] {
						continue
					}
					readKeys++
					if target, ok := artifact.AggregateTarget(c, k); ok && target != artifact.GlobalTarget && target != site {
						t.Errorf("%s reads %s, an aggregate of %s", site, k, target)
					}
					if _, folder, ok := artifact.RoundFolder(c, k); ok && folder == "" && !strings.HasSuffix(k, "/shared-state.parquet") {
						t.Errorf("%s reads %s, a record of the server", site, k)
					}
					readable = append(readable, vectorsOf(t, k, all[k])...)
				}
				// What the method itself makes public is not a leak of the
				// layout: drop it from the secrets, once checked to be
				// exactly what the method sends.
				own := map[string][]namedVector{}
				for owner, list := range secrets {
					for _, sv := range list {
						disclosed := false
						for _, r := range readable {
							if public[c][r.key] == sv.key && r.name == sv.name && slices.Equal(r.v, sv.v) {
								disclosed = true
							}
						}
						if !disclosed {
							own[owner] = append(own[owner], sv)
						}
					}
				}
				for _, l := range findLeaks(site, names, readable, own) {
					t.Errorf("%s: %s", site, l)
				}
			}
			if readKeys == 0 {
				t.Fatal("no site read anything: nothing was checked")
			}
			t.Logf("%d objects read by the %d sites, %d vectors of other sites held against them", readKeys, len(names), count(secrets))
		})
	}

	// The layout before: a site also read every cluster model (the
	// aggregate of one member of each cluster holds exactly its bytes) and
	// the server state. The same attacker must find the lone site's model
	// and the FoolsGold histories there.
	t.Run("old-layout", func(t *testing.T) {
		c := campaigns[learn.PTopoFL]
		var man pipeline.RoundManifest
		if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(c, 1), &man); err != nil {
			t.Fatal(err)
		}
		size := map[int]int{}
		for _, cl := range man.Clusters {
			size[cl.Cluster]++
		}
		alone := ""
		for _, cl := range man.Clusters {
			if size[cl.Cluster] == 1 {
				alone = cl.Site
			}
		}
		if alone == "" {
			t.Fatalf("no site is alone in a cluster in round 1 (%v): the two-cluster solve has nothing to find", man.Clusters)
		}
		attacker := names[0]
		if attacker == alone {
			attacker = names[1]
		}
		oldReadable := func(c string, server bool) []namedVector {
			var out []namedVector
			for _, k := range keys {
				if !strings.HasPrefix(k, artifact.CampaignPrefix(c)) {
					continue
				}
				_, isAggregate := artifact.AggregateTarget(c, k)
				if readBy[attacker][k] || isAggregate || (server && strings.HasSuffix(k, "/server-state.parquet")) {
					out = append(out, vectorsOf(t, k, all[k])...)
				}
			}
			return out
		}
		solved := false
		for _, l := range findLeaks(attacker, names, oldReadable(c, false), secretsOf(c)) {
			t.Logf("old layout, %s: %s", attacker, l)
			if l.owner == alone && len(l.from) == 2 && strings.Contains(l.secret.key, "/models/") {
				solved = true
			}
		}
		if !solved {
			t.Errorf("under the old layout %s did not solve %s's model from two cluster models: the test does not bite", attacker, alone)
		}
		fg := campaigns[learn.FoolsGold]
		histories := 0
		for _, l := range findLeaks(attacker, names, oldReadable(fg, true), secretsOf(fg)) {
			if strings.HasPrefix(l.secret.name, "foolsgold/") {
				histories++
			}
		}
		if histories == 0 {
			t.Error("under the old layout the FoolsGold server state showed no other site's history: the test does not bite")
		}
		t.Logf("old layout: %s's model solved by %s from two cluster models; %d FoolsGold history findings", alone, attacker, histories)
	})
}

func count(m map[string][]namedVector) int {
	n := 0
	for _, l := range m {
		n += len(l)
	}
	return n
}
