package activities_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// run executes activity name with in on a fresh test environment of
// what registers, and decodes its output into out.
func run(t *testing.T, reg func(*testsuite.TestActivityEnvironment), name string, in, out any) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	reg(env)
	v, err := env.ExecuteActivity(name, in)
	if err != nil {
		return err
	}
	return v.Get(out)
}

// mustRun is run that fails the test on an error.
func mustRun(t *testing.T, reg func(*testsuite.TestActivityEnvironment), name string, in, out any) {
	t.Helper()
	if err := run(t, reg, name, in, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestSecAggStagesRetrySameBytes runs the four stages of a FedAvg round
// under secure aggregation for three golden sites (one group, k = 3, t =
// 2) through the activities, every site activity twice as a retry would:
// each second run returns the same references (the same bytes at the same
// keys: keys, shares and masks derive from the site's secret and the
// run). A third SecAggMask with another weight and a third SecAggUnmask
// with other lists are refused (pipeline.ErrTypeSecAgg): a site sends one
// masked input per run and never reveals both secrets of a neighbour. The
// sum unmasks, and its model is the one the server writes.
func TestSecAggStagesRetrySameBytes(t *testing.T) {
	sites := []string{"client0", "client1", "client2"}
	h := method.Defaults(method.Paper)
	h.SecureAggregation = method.SecAggPlus
	const campaign = "secagg-retry"
	siteCall := func(i int) pipeline.SiteCall {
		c := call(campaign, sites[i], 1)
		c.Hyperparameters, c.SiteIndex = h, i
		return c
	}
	server := activities.NewServer(testStore)
	serverCall := pipeline.ServerCall{Campaign: campaign, Round: 1, Method: learn.FedAvg, Preset: method.Paper,
		Hyperparameters: h, Bucket: testStore.Bucket(), CampaignSeed: 42, Sites: sites}
	srv := func(env *testsuite.TestActivityEnvironment) { server.Register(env) }
	reg := make([]func(*testsuite.TestActivityEnvironment), len(sites))
	for i, name := range sites {
		secret, err := noise.SecretFromBytes(bytes.Repeat([]byte{byte(i + 1)}, 32))
		if err != nil {
			t.Fatal(err)
		}
		site := activities.NewSite(name, golden, testStore, dataset.SiteOptions{}).WithSecret(secret).WithKeep(t.TempDir())
		reg[i] = func(env *testsuite.TestActivityEnvironment) { site.Register(env) }
	}
	twice := func(i int, name string, in any, out func() any, same func(a, b any) bool) any {
		t.Helper()
		a, b := out(), out()
		mustRun(t, reg[i], name, in, a)
		mustRun(t, reg[i], name, in, b)
		if !same(a, b) {
			t.Fatalf("%s of %s: a retry returned %+v, the first run %+v", name, sites[i], b, a)
		}
		return a
	}
	// What a retry must repeat: the advertised keys and the kept model's
	// reference, and each stage's object reference (key, sha256, size).
	eq := func(a, b any) bool { return fmt.Sprint(sent(a)) == fmt.Sprint(sent(b)) }
	advert := map[string]pipeline.SecAggAdvert{}

	// 1. Training keeps the model and advertises the keys.
	plan := pipeline.SecAggPlanInput{ServerCall: serverCall, Groups: []pipeline.SecAggGroupFormed{{Name: aggregation.GlobalGroup, Members: sites}}}
	for i, name := range sites {
		tr := twice(i, pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: siteCall(i), SecAgg: &pipeline.SecAggTrain{Group: aggregation.GlobalGroup}},
			func() any { return &pipeline.TrainLocalOutput{} }, eq).(*pipeline.TrainLocalOutput)
		if tr.SecAgg == nil || !pipeline.IsKept(&tr.SecAgg.Model) || tr.Model.Key != "" {
			t.Fatalf("%s's training under secagg+ returned model %v, kept %+v", name, tr.Model, tr.SecAgg)
		}
		plan.Advertised = append(plan.Advertised, pipeline.SecAggSiteKeys{Site: name, Keys: tr.SecAgg.Keys})
		plan.Counts = append(plan.Counts, pipeline.SiteCount{Site: name, NumTrain: tr.NumTrain})
		advert[name] = *tr.SecAgg
	}
	var p pipeline.SecAggPlanOutput
	mustRun(t, srv, pipeline.ActivitySecAggPlan, plan, &p)
	if len(p.Groups) != 1 || p.Groups[0].Config.Shares != 3 || p.Groups[0].Config.Threshold != 2 {
		t.Fatalf("plan %+v", p.Groups)
	}

	// 2. Shares, forwarded.
	route := pipeline.SecAggRouteInput{ServerCall: serverCall, Groups: []pipeline.SecAggRouteGroup{{Name: aggregation.GlobalGroup}}}
	for i, sp := range p.Sites {
		sh := twice(i, pipeline.ActivitySecAggShare, pipeline.SecAggShareInput{SiteCall: siteCall(i), Group: sp.Group, View: sp.View},
			func() any { return &pipeline.SecAggShareOutput{} }, eq).(*pipeline.SecAggShareOutput)
		route.Groups[0].Shares = append(route.Groups[0].Shares, pipeline.SiteArtifact{Site: sp.Site, Ref: sh.Shares})
	}
	var rt pipeline.SecAggRouteOutput
	mustRun(t, srv, pipeline.ActivitySecAggRoute, route, &rt)

	// 3. Masked inputs.
	sum := pipeline.SecAggSumGroup{Plan: p.Groups[0], Shared: sites}
	maskIn := func(i int, w float64) pipeline.SecAggMaskInput {
		sp := p.Sites[i]
		return pipeline.SecAggMaskInput{SiteCall: siteCall(i), Group: sp.Group, View: sp.View, Inbox: rt.Inboxes[i].Ref,
			Weight: w, Model: advert[sites[i]].Model}
	}
	for i, sp := range p.Sites {
		mk := twice(i, pipeline.ActivitySecAggMask, maskIn(i, sp.Weight),
			func() any { return &pipeline.SecAggMaskOutput{} }, eq).(*pipeline.SecAggMaskOutput)
		sum.Masked = append(sum.Masked, pipeline.SiteArtifact{Site: sp.Site, Ref: mk.Masked})
		if len(mk.Released.Released) != 1 || mk.Released.Released[0].Within != aggregation.GlobalGroup {
			t.Errorf("%s released %+v", sp.Site, mk.Released)
		}
	}
	var appErr *temporal.ApplicationError
	err := run(t, reg[0], pipeline.ActivitySecAggMask, maskIn(0, p.Sites[0].Weight*2), &pipeline.SecAggMaskOutput{})
	if !errors.As(err, &appErr) || appErr.Type() != pipeline.ErrTypeSecAgg || !strings.Contains(err.Error(), "already sent another masked input") {
		t.Errorf("a second masked input with another weight: %v", err)
	}

	// 4. Reveals.
	var ck pipeline.SecAggCheckOutput
	mustRun(t, srv, pipeline.ActivitySecAggCheck, pipeline.SecAggCheckInput{ServerCall: serverCall,
		Groups: []pipeline.SecAggCheckGroup{{Plan: p.Groups[0], Shared: sites, Survivors: sites}}}, &ck)
	if ck.Failure != "" || len(ck.Unmask) != 3 {
		t.Fatalf("check: %+v", ck)
	}
	unmaskIn := func(i int, l pipeline.SecAggUnmaskList) pipeline.SecAggUnmaskInput {
		sp := p.Sites[i]
		return pipeline.SecAggUnmaskInput{SiteCall: siteCall(i), Group: sp.Group, View: sp.View, Inbox: rt.Inboxes[i].Ref,
			Survivors: l.Survivors, Dropped: l.Dropped}
	}
	for i, l := range ck.Unmask {
		rv := twice(i, pipeline.ActivitySecAggUnmask, unmaskIn(i, l),
			func() any { return &pipeline.SecAggUnmaskOutput{} }, eq).(*pipeline.SecAggUnmaskOutput)
		sum.Reveals = append(sum.Reveals, pipeline.SiteArtifact{Site: l.Site, Ref: rv.Reveal})
	}
	// The server asks client0 again, now saying client1 dropped: it would
	// reveal client1's mask secret after its self-mask secret.
	other := pipeline.SecAggUnmaskList{Site: "client0", Survivors: []string{"client0", "client2"}, Dropped: []string{"client1"}}
	err = run(t, reg[0], pipeline.ActivitySecAggUnmask, unmaskIn(0, other), &pipeline.SecAggUnmaskOutput{})
	if !errors.As(err, &appErr) || appErr.Type() != pipeline.ErrTypeSecAgg || !strings.Contains(err.Error(), "already revealed shares in this run") {
		t.Errorf("a second reveal with other lists: %v", err)
	}

	// The sum, and the models from it.
	var out pipeline.SecAggSumOutput
	mustRun(t, srv, pipeline.ActivitySecAggSum, pipeline.SecAggSumInput{ServerCall: serverCall, Groups: []pipeline.SecAggSumGroup{sum},
		Sites: p.Sites, Counts: plan.Counts}, &out)
	if len(out.Sums) != 1 || len(out.Models) != 3 {
		t.Fatalf("sum: %+v", out)
	}
}

// sent is what a site activity's output sends the server, without its
// timings.
func sent(v any) any {
	switch o := v.(type) {
	case *pipeline.TrainLocalOutput:
		return []any{o.Model, o.NumTrain, *o.SecAgg}
	case *pipeline.SecAggShareOutput:
		return o.Shares
	case *pipeline.SecAggMaskOutput:
		return []any{o.Masked, o.Released.Released}
	case *pipeline.SecAggUnmaskOutput:
		return o.Reveal
	}
	return v
}
