package activities_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/s3local"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// testStore talks to a real S3 server (internal/s3local) on 127.0.0.1,
// started once for the package in TestMain.
var testStore *store.Store

// golden is the healthcare federation simulate's tests read, made absolute
// before s3local changes the working directory.
var golden string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		var err error
		if golden, err = filepath.Abs("../testdata/paper/healthcare"); err != nil {
			panic(err)
		}
		dir, err := os.MkdirTemp("", "activities-s3-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		const access, secret = "activities-test", "activities-test-secret-0123"
		srv, err := s3local.Start(context.Background(), s3local.Config{Dir: dir, AccessKey: access, SecretKey: secret})
		if err != nil {
			panic(err)
		}
		defer srv.Stop()
		if testStore, err = store.New(store.Config{Endpoint: srv.URL(), Bucket: "test", AccessKey: access, SecretKey: secret}); err != nil {
			panic(err)
		}
		if err := testStore.EnsureBucket(context.Background()); err != nil {
			panic(err)
		}
		return m.Run()
	}())
}

func call(campaign, site string, round int) pipeline.SiteCall {
	h := method.Defaults(method.Paper)
	return pipeline.SiteCall{
		Campaign: campaign, Round: round, Site: site, Method: learn.FedAvg, Preset: method.Paper,
		Hyperparameters: h, Bucket: testStore.Bucket(), CampaignSeed: 42,
		Seed: pipeline.DeriveSeed(42, round, site, pipeline.PurposeTrain),
	}
}

// TestSiteActivitiesIdempotent trains, evaluates and computes a descriptor
// for a golden site twice and requires the same refs (same bytes at the
// same deterministic keys).
func TestSiteActivitiesIdempotent(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	site := activities.NewSite("client0", golden, testStore, dataset.SiteOptions{})
	var refs [2][]pipeline.ArtifactRef
	for i := range refs {
		env := s.NewTestActivityEnvironment()
		site.Register(env)
		v, err := env.ExecuteActivity(pipeline.ActivityComputeDescriptor, pipeline.ComputeDescriptorInput{SiteCall: call("idem", "client0", 1)})
		if err != nil {
			t.Fatal(err)
		}
		var d pipeline.ComputeDescriptorOutput
		if err := v.Get(&d); err != nil {
			t.Fatal(err)
		}
		v, err = env.ExecuteActivity(pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: call("idem", "client0", 1)})
		if err != nil {
			t.Fatal(err)
		}
		var tr pipeline.TrainLocalOutput
		if err := v.Get(&tr); err != nil {
			t.Fatal(err)
		}
		v, err = env.ExecuteActivity(pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: call("idem", "client0", 1), Model: tr.Model, SiteState: tr.SiteState})
		if err != nil {
			t.Fatal(err)
		}
		var ev pipeline.EvaluateOutput
		if err := v.Get(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.NumTest != 32 || !(ev.AUC > 0.5) || tr.NumTrain != 130 || d.NumTrain != 130 {
			t.Errorf("attempt %d: n_train %d/%d n_test %d AUC %v", i, d.NumTrain, tr.NumTrain, ev.NumTest, ev.AUC)
		}
		if tr.SiteState != nil {
			t.Errorf("attempt %d: FedAvg keeps nothing between rounds, yet wrote a site state %s", i, tr.SiteState.Key)
		}
		refs[i] = []pipeline.ArtifactRef{d.Descriptor, tr.Model}
	}
	for j := range refs[0] {
		if refs[0][j] != refs[1][j] {
			t.Errorf("artifact %d: first %v, retry %v", j, refs[0][j], refs[1][j])
		}
		if !strings.HasPrefix(refs[0][j].Key, "campaigns/idem/round-0001/") {
			t.Errorf("artifact %d at %s, outside the round's folder", j, refs[0][j].Key)
		}
	}
}

// TestBadSiteData: each class of bad data fails every site activity with a
// non-retryable BadSiteData error naming the site, the file and the line.
func TestBadSiteData(t *testing.T) {
	const good = "x0,x1,y\n1.5,2.5,0\n0.5,1.0,1\n2.0,0.1,0\n"
	for i, tc := range []struct {
		name        string
		train, test string
		file        string // the file the error must name
		line        int
		msg         string
		schema      []string // the campaign's feature columns; nil: no schema
	}{
		{"wrong feature count", good, "x0,y\n1,0\n2,1\n", "test", 2, "feature columns", nil}, // 0: first data row
		{"NaN", "x0,x1,y\n1,2,0\n3,NaN,1\n", good, "train", 3, "NaN", nil},
		{"Inf", good, "x0,x1,y\n1,2,0\n3,4,1\n5,-Inf,0\n", "test", 4, "infinite", nil},
		{"single class", "x0,x1,y\n1,2,1\n3,4,1\n5,6,1\n", good, "train", 2, "both classes", nil},
		{"labels not 0/1", "x0,x1,y\n1,2,0\n3,4,2\n", good, "train", 3, "not 0 or 1", nil},
		{"empty file", "", good, "train", 1, "empty file", nil}, // 5
		{"header only", "x0,x1,y\n", good, "train", 2, "no data rows", nil},
		{"missing label column", "x0,x1,x2\n1,2,0\n3,4,1\n", good, "train", 1, `no label column "y"`, nil},
		{"ragged row", "x0,x1,y\n1,2,0\n3,1\n", good, "train", 3, "cells", nil},
		{"test columns renamed", good, "x0,z,y\n1,2,0\n", "test", 1, `feature column 2 is not named "x1" as in the training split`, nil}, // 9
		{"a feature more than the schema", good, good, "train", 1, "2 feature columns, the campaign's schema has 1 (x0)", []string{"x0"}},
		{"columns swapped against the schema", good, good, "train", 1, `feature column 1 is not named "x1" as in the campaign's schema`, []string{"x1", "x0"}},
	} {
		dir := t.TempDir()
		site := fmt.Sprintf("bad%d", i)
		files := map[string]string{"train": filepath.Join(dir, site+"_train.csv"), "test": filepath.Join(dir, site+"_test.csv")}
		if err := os.WriteFile(files["train"], []byte(tc.train), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(files["test"], []byte(tc.test), 0o644); err != nil {
			t.Fatal(err)
		}
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		activities.NewSite(site, dir, testStore, dataset.SiteOptions{}).Register(env)
		c := call("bad", site, 1)
		if tc.schema != nil {
			c.Schema = &pipeline.DataSchema{Kind: pipeline.SchemaTable, Features: tc.schema, Label: "y"}
		}
		for _, act := range []struct {
			name string
			in   any
		}{
			{pipeline.ActivityComputeDescriptor, pipeline.ComputeDescriptorInput{SiteCall: c}},
			{pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: c}},
			{pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: c}},
		} {
			_, err := env.ExecuteActivity(act.name, act.in)
			var ae *temporal.ApplicationError
			if !errors.As(err, &ae) {
				t.Errorf("%d (%s) %s: error %v, want an application error", i, tc.name, act.name, err)
				continue
			}
			// The line, then the column where the problem is one cell.
			want := fmt.Sprintf("site %s: %s:%d", site, files[tc.file], tc.line)
			at := strings.Contains(ae.Error(), want+": ") || regexp.MustCompile(regexp.QuoteMeta(want)+`:\d+: `).MatchString(ae.Error())
			if ae.Type() != pipeline.ErrTypeBadSiteData || !ae.NonRetryable() || !at || !strings.Contains(ae.Error(), tc.msg) {
				t.Errorf("%d (%s) %s: %q (type %s, non-retryable %v), want type %s, non-retryable, containing %q and %q",
					i, tc.name, act.name, ae.Error(), ae.Type(), ae.NonRetryable(), pipeline.ErrTypeBadSiteData, want, tc.msg)
			}
		}
	}
}

// TestTrainLocalScoresOwnUpdate: asked to, the training activity of a
// LocalOnly site scores its own fit exactly as the evaluation activity
// would; a method scored on the aggregated model refuses the request.
func TestTrainLocalScoresOwnUpdate(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	site := activities.NewSite("client0", golden, testStore, dataset.SiteOptions{})
	env := s.NewTestActivityEnvironment()
	site.Register(env)

	c := call("own", "client0", 1)
	c.Method = learn.LocalOnly
	v, err := env.ExecuteActivity(pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: c, Evaluate: true})
	if err != nil {
		t.Fatal(err)
	}
	var tr pipeline.TrainLocalOutput
	if err := v.Get(&tr); err != nil {
		t.Fatal(err)
	}
	if tr.Evaluation == nil {
		t.Fatal("no evaluation returned")
	}
	v, err = env.ExecuteActivity(pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: c, Model: tr.Model, SiteState: tr.SiteState})
	if err != nil {
		t.Fatal(err)
	}
	var ev pipeline.EvaluateOutput
	if err := v.Get(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.StoreSeconds <= 0 || tr.StoreSeconds <= 0 {
		t.Errorf("store seconds %v (training) and %v (evaluation): want both positive (the activities read and write S3)", tr.StoreSeconds, ev.StoreSeconds)
	}
	ev.Spent = pipeline.Spent{} // the scores must agree, not the time they took
	if !slices.Equal(ev.Released.Released, []pipeline.Release{{Kind: pipeline.ReleaseMetrics, Numbers: 2}}) {
		t.Errorf("evaluation released %+v, want its two metrics", ev.Released)
	}
	ev.Released = pipeline.Released{} // the training activity lists it among its own releases
	if !reflect.DeepEqual(*tr.Evaluation, ev) {
		t.Errorf("scored in training %+v, by the evaluation activity %+v", *tr.Evaluation, ev)
	}

	c = call("own", "client0", 1) // FedAvg: scored on the global model
	if _, err := env.ExecuteActivity(pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: c, Evaluate: true}); err == nil ||
		!strings.Contains(err.Error(), "scores the aggregated model") {
		t.Errorf("FedAvg asked to evaluate in training: err %v", err)
	}
}

// TestEvaluatesOwnUpdateAgreesWithLearn: the workflow asks a site to score
// in training exactly for the methods whose score learn.EvaluationParams
// takes from the site's own state rather than from the pushed model.
func TestEvaluatesOwnUpdateAgreesWithLearn(t *testing.T) {
	pushed := []float64{1}
	state := learn.SiteState{Local: []float64{2}, Personal: []float64{3}}
	for i, m := range learn.Methods {
		own := &learn.EvaluationParams(learn.Method(m), pushed, state)[0] != &pushed[0]
		if got := method.EvaluatesOwnUpdate(m); got != own {
			t.Errorf("case %d (%s): EvaluatesOwnUpdate = %v, learn.EvaluationParams scores the %s", i, m, got,
				map[bool]string{true: "site's own state", false: "pushed model"}[own])
		}
	}
}

// TestDescriptorRowsBadSiteData: descriptor rows that do not fit a site's
// training data (a row past its end, a row twice) fail the descriptor
// activity with a non-retryable BadSiteData error naming the site and its
// training file, for a tabular site and a deep one alike, so the site is
// dropped from the round at once instead of retried until the deadline.
func TestDescriptorRowsBadSiteData(t *testing.T) {
	imageDir := t.TempDir()
	const side, classes = 8, 3
	images := func(n int) *dataset.Images {
		im := &dataset.Images{N: n, H: side, W: side, C: 1, Classes: classes, Pixels: make([]float32, n*side*side), Labels: make([]int, n)}
		for i := range n {
			im.Labels[i] = i % classes
			for p := range side * side {
				im.Pixels[i*side*side+p] = float32((i*31+p*17)%13) / 16
			}
		}
		return im
	}
	fed := []dataset.ImageSite{{Name: "img0", Train: images(12), Test: images(6)}}
	if err := dataset.WriteImageFederation(imageDir, fed, dataset.ImageManifest{Generator: "test", Classes: classes}); err != nil {
		t.Fatal(err)
	}
	trainImages, _ := dataset.ImageFiles("img0", dataset.TrainSplit)
	deep := func(rows []int) pipeline.ComputeDescriptorInput {
		c := call("rows", "img0", 1)
		c.Method, c.Preset = learn.PTopoFL, method.DeepSmall
		c.Hyperparameters = method.Defaults(method.DeepSmall)
		c.Hyperparameters.Classes = classes
		return pipeline.ComputeDescriptorInput{SiteCall: c, Rows: rows}
	}
	tabular := func(rows []int) pipeline.ComputeDescriptorInput {
		return pipeline.ComputeDescriptorInput{SiteCall: call("rows", "client0", 1), Rows: rows}
	}
	for i, tc := range []struct {
		site, dir string
		in        pipeline.ComputeDescriptorInput
		file      string // the file the error names
		msg       string
	}{
		{"client0", golden, tabular([]int{0, 130}), "client0_train.csv", "Rows[1] = 130 is out of range [0, 130)"}, // 0: 130 training rows
		{"client0", golden, tabular([]int{4, 9, 4}), "client0_train.csv", "Rows[2] = 4 is repeated"},
		{"img0", imageDir, deep([]int{0, 12}), trainImages, "rows[1] = 12 is out of range [0, 12)"}, // 2: 12 training images
		{"img0", imageDir, deep([]int{4, 9, 4}), trainImages, "rows[2] = 4 is repeated"},
	} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		activities.NewSite(tc.site, tc.dir, testStore, dataset.SiteOptions{}).Register(env)
		_, err := env.ExecuteActivity(pipeline.ActivityComputeDescriptor, tc.in)
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || ae.Type() != pipeline.ErrTypeBadSiteData || !ae.NonRetryable() ||
			!strings.Contains(ae.Error(), "site "+tc.site+": ") || !strings.Contains(ae.Error(), tc.file+": descriptor: ") || !strings.Contains(ae.Error(), tc.msg) {
			t.Errorf("%d: %v; want a non-retryable %s error naming site %s, %s and %q", i, err, pipeline.ErrTypeBadSiteData, tc.site, tc.file, tc.msg)
		}
	}
}

// TestTrainLocalDivergedIsNotRetried: a local update whose model is not
// finite (gradient descent at lr 1e300) fails with the non-retryable
// Diverged error naming site and round, instead of failing at encoding
// with a retryable error that would repeat until the round's deadline.
func TestTrainLocalDivergedIsNotRetried(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	activities.NewSite("client0", golden, testStore, dataset.SiteOptions{}).Register(env)
	c := call("diverged", "client0", 1)
	c.Preset, c.Hyperparameters = method.Default, method.Defaults(method.Default)
	c.Hyperparameters.LR = 1e300
	_, err := env.ExecuteActivity(pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: c})
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != pipeline.ErrTypeDiverged || !ae.NonRetryable() ||
		!strings.Contains(ae.Error(), "site client0 round 1: the fedavg model diverged") {
		t.Errorf("error %v, want a non-retryable %s error naming site and round", err, pipeline.ErrTypeDiverged)
	}
}
