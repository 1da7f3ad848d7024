package theory

import (
	"fmt"
	"testing"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/tda"
)

// runInMemory runs rounds rounds of cfg's method over fed with the
// system's site update (learn.UpdateSite) and server aggregation
// (aggregation.AggregateRound), as package simulate and the durable
// pipeline do, and records what a campaign's artifacts would hold: the
// sites' descriptors (tda.ComputeDescriptor with the configuration's
// variant and n_sub, and the label-aware summary when its detector reads
// one), start, local and received models. aggregate, when not nil,
// replaces AggregateRound (a broken aggregation for the tests).
func runInMemory(t *testing.T, fed eval.Federation, cfg method.Config, rounds int, aggregate func(aggregation.RoundInput) (aggregation.RoundOutput, error)) CampaignRun {
	t.Helper()
	if aggregate == nil {
		aggregate = aggregation.AggregateRound
	}
	run := CampaignRun{Campaign: "in-memory", Federation: "test", Setting: string(cfg.Server.Detector), Config: cfg}
	k := len(fed.Sites)
	prep := make([]method.PreparedSite, k)
	desc := make([][]float64, k)
	for i, s := range fed.Sites {
		y := floats(s.YTrain)
		p, err := method.PrepareSite(s.Name, s.XTrain, y, s.XTest, floats(s.YTest))
		if err != nil {
			t.Fatal(err)
		}
		prep[i] = p
		d, err := tda.ComputeDescriptor(s.XTrain, tda.DescriptorOptions{Variant: cfg.Descriptor, NSub: cfg.NSub, Seed: uint64(100 + i)})
		if err != nil {
			t.Fatal(err)
		}
		desc[i] = d.Vector
		if cfg.LabelAware() {
			l, err := tda.LabelledSummary(s.XTrain, y, tda.LabelledOptions{NSub: cfg.LabelNSub, Seed: uint64(100 + i)})
			if err != nil {
				t.Fatal(err)
			}
			desc[i] = append(desc[i], l...)
		}
		run.Sites = append(run.Sites, RunSite{Name: s.Name, Adversarial: s.IsAdversarial, N: len(s.XTrain)})
	}
	states := make([]learn.SiteState, k)
	pushed := make([][]float64, k)
	server := aggregation.ServerState{}
	for r := 1; r <= rounds; r++ {
		rr := RunRound{Round: r, Descriptors: desc}
		if r > 1 {
			rr.Start = pushed
		}
		results := make([]aggregation.SiteResult, k)
		for i, s := range fed.Sites {
			train, _ := prep[i].Splits(false)
			out, err := learn.UpdateSite(learn.SiteInput{Method: cfg.Method, Round: r, Seed: uint32(42 + i),
				Train: train, TopologyX: s.XTrain, Descriptor: desc[i][:tda.DescriptorLen], Pushed: pushed[i], State: states[i], Config: cfg.Site})
			if err != nil {
				t.Fatal(err)
			}
			states[i] = out.State
			results[i] = aggregation.SiteResult{Params: out.Params, N: out.N, Descriptor: desc[i]}
			rr.Local = append(rr.Local, out.Params)
		}
		agg, err := aggregate(aggregation.RoundInput{Method: cfg.Method, Round: r, Sites: results, State: server, Config: cfg.Server})
		if err != nil {
			t.Fatal(err)
		}
		server, pushed = agg.State, agg.Models
		rr.Received = pushed
		run.Rounds = append(run.Rounds, rr)
	}
	return run
}

func floats(y []int) []float64 {
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = float64(v)
	}
	return out
}

// adversarialFederation is the adversarial experiment's federation of
// seed seed with sites adv flipping 30 % of their labels.
func adversarialFederation(t *testing.T, seed uint64, adv []int) eval.Federation {
	t.Helper()
	opt := eval.DefaultHealthcareOptions(seed)
	opt.Adversarial, opt.FlipFraction = adv, 0.3
	fed, err := eval.Healthcare(opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range fed.Sites {
		fed.Sites[i].Name = fmt.Sprintf("site%d", i)
	}
	return fed
}

// ptopoflConfig is pTopoFL under the default preset with the given
// detector and τ 1.8 (the adversarial experiment's).
func ptopoflConfig(t *testing.T, detector string) method.Config {
	t.Helper()
	h := method.Defaults(method.Default)
	h.Detector = detector
	h.AnomalyThreshold = 1.8
	cfg, err := method.Resolve(learn.PTopoFL, method.Default, h)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
