package activities_test

import (
	"bytes"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// dpCall is call under dp record with planned noise, for golden client0
// (130 training and 32 test records).
func dpCall(campaign string, m learn.Method, round int) pipeline.SiteCall {
	c := call(campaign, "client0", round)
	c.Method, c.Preset = m, method.Default
	h := method.Defaults(method.Default)
	h.DP, h.DPNoise, h.DPMetricsNoise, h.DPDescriptorNoise = method.DPRecord, 5, 3, 2
	c.Hyperparameters = h
	c.NTrain, c.NTest = 130, 32
	return c
}

func secret(t *testing.T, b byte) noise.Secret {
	t.Helper()
	s, err := noise.SecretFromBytes(bytes.Repeat([]byte{b}, noise.SecretSize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPrivateSiteReleases: under dp record a retried activity (same
// input, same secret) releases the very same bytes; another secret
// releases other bytes (the noise is the site's, not the campaign's); a
// site without a secret, or whose record counts differ from the plan's,
// refuses at once with a non-retryable error.
func TestPrivateSiteReleases(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	run := func(site *activities.Site, name string, in any) (any, error) {
		env := s.NewTestActivityEnvironment()
		site.Register(env)
		v, err := env.ExecuteActivity(name, in)
		if err != nil {
			return nil, err
		}
		switch in.(type) {
		case pipeline.ComputeDescriptorInput:
			var out pipeline.ComputeDescriptorOutput
			return out, v.Get(&out)
		case pipeline.TrainLocalInput:
			var out pipeline.TrainLocalOutput
			return out, v.Get(&out)
		}
		var out pipeline.EvaluateOutput
		return out, v.Get(&out)
	}
	a := activities.NewSite("client0", golden, testStore, dataset.SiteOptions{}).WithSecret(secret(t, 1))
	b := activities.NewSite("client0", golden, testStore, dataset.SiteOptions{}).WithSecret(secret(t, 2))
	desc := pipeline.ComputeDescriptorInput{SiteCall: dpCall("dp-a", learn.PTopoFL, 1)}
	train := pipeline.TrainLocalInput{SiteCall: dpCall("dp-a", learn.FedAvg, 1)}
	first, err := run(a, pipeline.ActivityComputeDescriptor, desc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := run(a, pipeline.ActivityComputeDescriptor, desc)
	if err != nil {
		t.Fatal(err)
	}
	d1, d2 := first.(pipeline.ComputeDescriptorOutput), again.(pipeline.ComputeDescriptorOutput)
	if d1.Descriptor != d2.Descriptor {
		t.Errorf("a retried descriptor released %s then %s", d1.Descriptor.SHA256, d2.Descriptor.SHA256)
	}
	if text := releasedText(d1.Released.Released); text != "descriptor:48 label_summary:11" {
		t.Errorf("descriptor released %q", text)
	}
	tr1, err := run(a, pipeline.ActivityTrainLocal, train)
	if err != nil {
		t.Fatal(err)
	}
	tr2, err := run(a, pipeline.ActivityTrainLocal, train)
	if err != nil {
		t.Fatal(err)
	}
	m1, m2 := tr1.(pipeline.TrainLocalOutput), tr2.(pipeline.TrainLocalOutput)
	if m1.Model != m2.Model || m1.Loss != 0 {
		t.Errorf("a retried training released %s then %s (loss %v: none is released under dp record)", m1.Model.SHA256, m2.Model.SHA256, m1.Loss)
	}
	ev := pipeline.EvaluateInput{SiteCall: dpCall("dp-a", learn.FedAvg, 1), Model: m1.Model}
	e1, err := run(a, pipeline.ActivityEvaluate, ev)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := run(a, pipeline.ActivityEvaluate, ev)
	if err != nil {
		t.Fatal(err)
	}
	if x, y := e1.(pipeline.EvaluateOutput), e2.(pipeline.EvaluateOutput); x.AUC != y.AUC || x.Accuracy != y.Accuracy || x.NumTest != 32 {
		t.Errorf("a retried evaluation released %+v then %+v", x, y)
	}
	// Another site secret: other noise, so other bytes.
	other, err := run(b, pipeline.ActivityTrainLocal, train)
	if err != nil {
		t.Fatal(err)
	}
	if other.(pipeline.TrainLocalOutput).Model.SHA256 == m1.Model.SHA256 {
		t.Error("two site secrets released the same model")
	}

	none := activities.NewSite("client0", golden, testStore, dataset.SiteOptions{})
	if _, err := run(none, pipeline.ActivityTrainLocal, train); err == nil || !strings.Contains(err.Error(), "has no secret") {
		t.Errorf("a site without a secret: err %v", err)
	}
	wrong := train
	wrong.NTrain = 129
	if _, err := run(a, pipeline.ActivityTrainLocal, wrong); err == nil || !strings.Contains(err.Error(), "made for 129 training") {
		t.Errorf("record counts other than the plan's: err %v", err)
	}
}

func releasedText(items []pipeline.Release) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, it.Kind+":"+itoa(it.Numbers))
	}
	return strings.Join(parts, " ")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestChargePrivacy: the charge of a round adds its releases to every
// site's ledger, records each site's ε for the round and in all, composes
// a second round onto the first (GDP: μ² adds, so two equal rounds give
// μ√2), and refuses a round beyond the budget without charging it.
func TestChargePrivacy(t *testing.T) {
	h := method.Defaults(method.Default)
	h.DP, h.DPEpsilon = method.DPRecord, 2
	h, _, err := method.PlanPrivacy(learn.FedAvg, method.Default, h, 2, []method.SiteRecords{{Site: "a", Train: 100, Test: 30}, {Site: "b", Train: 50, Test: 30}})
	if err != nil {
		t.Fatal(err)
	}
	srv := activities.NewServer(testStore)
	in := pipeline.ChargePrivacyInput{
		ServerCall: pipeline.ServerCall{Campaign: "charge", Round: 1, Method: learn.FedAvg, Preset: method.Default, Hyperparameters: h, Sites: []string{"a", "b"}},
		Records:    []pipeline.Site{{Name: "a", NTrain: 100, NTest: 30}, {Name: "b", NTrain: 50, NTest: 30}},
	}
	r1, err := srv.ChargePrivacy(t.Context(), in)
	if err != nil || r1.Exceeded != "" {
		t.Fatalf("round 1: %v %q", err, r1.Exceeded)
	}
	in.Round, in.Ledger = 2, r1.Ledger
	r2, err := srv.ChargePrivacy(t.Context(), in)
	if err != nil || r2.Exceeded != "" {
		t.Fatalf("round 2: %v %q", err, r2.Exceeded)
	}
	for i, s := range r2.Round.Sites {
		one := r1.Round.Sites[i]
		if one.Epsilon != one.EpsilonRound || s.EpsilonRound != one.EpsilonRound {
			t.Errorf("site %s: round 1 ε %v (alone %v), round 2 alone %v: every round costs the same", s.Site, one.Epsilon, one.EpsilonRound, s.EpsilonRound)
		}
		if !(s.Epsilon > one.Epsilon && s.Epsilon <= 2) || s.Accountant != "gdp" {
			t.Errorf("site %s: ε %v after two rounds (one: %v), want more and within the budget 2, by gdp (%s)", s.Site, s.Epsilon, one.Epsilon, s.Accountant)
		}
	}
	if got := r2.Ledger.Sites[0].Train[0].Count; got != 2*30 {
		t.Errorf("ledger holds %d training steps after two rounds, want 60", got)
	}
	in.Round, in.Ledger = 3, r2.Ledger
	r3, err := srv.ChargePrivacy(t.Context(), in)
	if err != nil || r3.Ledger != nil || !strings.Contains(r3.Exceeded, "round 3 would take site a") {
		t.Errorf("round 3 beyond the plan: err %v, ledger %v, exceeded %q", err, r3.Ledger, r3.Exceeded)
	}
}
