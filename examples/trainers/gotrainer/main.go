// Command trainer is an example of a site's own training program under the
// trainer protocol ptopofl.trainer/v1, written in Go on our packages learn
// and nn and the protocol's public package trainer (files in and files
// out, docs/how-to/own-trainer.md). A site worker runs it one process per
// task with
//
//	worker --role site --trainer go=/path/to/trainer ...
//
// or, one long-lived process per site that keeps the site's data loaded
// between tasks, with --trainer-serve go=/path/to/trainer; a campaign
// selects it with --set model=external --set trainer=go. trainer.Main
// serves both modes.
//
// On a tabular site it trains logistic regression exactly as our
// in-process model does (method.PrepareSite's standardisation,
// learn.UpdateSite, round 1 started as learn starts it: zeros under
// L-BFGS, each site's own seeded model under gradient descent); on an image site the network
// that trainer_params' "network" names ("cnn" by default; the campaign's
// width, hidden, classes, optimiser and local training settings), exactly
// as our in-process deep models do (method.PrepareDeepSite,
// nn.UpdateSite, method.EvaluateDeep, method.DeepActivations). A campaign
// whose sites run it therefore gives the same models, bit for bit, as the
// in-process one for FedAvg, FedProx, local training and the robust
// aggregators; pTopoFL's tabular site update, whose sample weights need
// the descriptor, is FedAvg's here (the protocol does not carry the
// descriptor to the program).
//
// Its model file holds one tensor, "params": the flat parameter vector in
// our own order (F64 for logistic regression, F32 for a network).
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/safetensors"
	"github.com/ptopofl/ptopofl/trainer"
)

func fail(code int, kind string, format string, args ...any) error {
	return trainer.Fail(code, kind, format, args...)
}

func main() { trainer.Main(run) }

// run does one task.
func run(t trainer.Task) (trainer.Result, error) {
	hb, err := json.Marshal(t.Hyperparameters)
	if err != nil {
		return trainer.Result{}, err
	}
	var extra struct {
		Preset  string `json:"preset"`
		Network string `json:"network"`
	}
	if err := json.Unmarshal(hb, &extra); err != nil {
		return trainer.Result{}, fmt.Errorf("hyperparameters: %w", err)
	}
	var h method.Hyperparameters
	if err := json.Unmarshal(hb, &h); err != nil {
		return trainer.Result{}, fmt.Errorf("hyperparameters: %w", err)
	}
	m := learn.Method(t.Method)
	var res trainer.Result
	switch len(t.TrainData) {
	case 1:
		h.Model = method.ModelLogistic
		if m == learn.PTopoFL {
			m = learn.FedAvg // its sample weights need the descriptor, which the program is not sent
		}
		cfg, err := method.Resolve(m, extra.Preset, h)
		if err != nil {
			return trainer.Result{}, fmt.Errorf("configuration: %w", err)
		}
		res, err = tabular(t, cfg)
		if err != nil {
			return trainer.Result{}, err
		}
	case 2:
		h.Model = extra.Network
		if h.Model == "" {
			h.Model = method.ModelCNN
		}
		cfg, err := method.Resolve(m, extra.Preset, h)
		if err != nil {
			return trainer.Result{}, fmt.Errorf("configuration: %w", err)
		}
		res, err = images(t, cfg)
		if err != nil {
			return trainer.Result{}, err
		}
	default:
		return trainer.Result{}, fail(65, "data_files", "%d training files: want one table or an images and a labels file", len(t.TrainData))
	}
	return res, nil
}

// result is a result of n examples.
func result(n int, metrics map[string]float64) trainer.Result {
	return trainer.Result{NumExamples: int64(n), Metrics: metrics}
}

// loaded keeps what a serve-mode process read of its site's files for the
// next tasks, by the files' names, sizes and modification times (a
// per-task process reads them once anyway).
var loaded = map[string]any{}

// load returns what read made of files the last time they were the same,
// or reads them afresh.
func load[T any](files []string, extra string, read func() (T, error)) (T, error) {
	key := extra
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			var zero T
			return zero, fail(65, "data_files", "%v", err)
		}
		key += fmt.Sprintf("\x00%s\x00%d\x00%d", f, fi.Size(), fi.ModTime().UnixNano())
	}
	if v, ok := loaded[key].(T); ok {
		return v, nil
	}
	v, err := read()
	if err != nil {
		return v, err
	}
	loaded[key] = v
	return v, nil
}

// tabularSite is a tabular site's files as read and prepared.
type tabularSite struct {
	trainX [][]float64
	p      method.PreparedSite
}

// tabular runs a task on a tabular site.
func tabular(t trainer.Task, cfg method.Config) (trainer.Result, error) {
	label := t.Label
	if label == "" {
		label = dataset.DefaultLabelColumn
	}
	site, err := load(append(append([]string(nil), t.TrainData...), t.TestData...), t.Site+"\x00"+label, func() (tabularSite, error) {
		opt := dataset.SiteOptions{LabelColumn: label}
		tr, err := dataset.ReadSplit(t.Site, t.TrainData[0], opt)
		if err != nil {
			return tabularSite{}, fail(65, "train_data", "%v", err)
		}
		te, err := dataset.ReadSplit(t.Site, t.TestData[0], opt)
		if err != nil {
			return tabularSite{}, fail(65, "test_data", "%v", err)
		}
		p, err := method.PrepareSite(t.Site, tr.X, tr.Y, te.X, te.Y)
		if err != nil {
			return tabularSite{}, fail(65, "prepare", "%v", err)
		}
		return tabularSite{trainX: tr.X, p: p}, nil
	})
	if err != nil {
		return trainer.Result{}, err
	}
	train, test := site.p.Splits(false)
	n := train.NumFeatures() + 1
	switch t.Task {
	case "init":
		return result(len(train.X), map[string]float64{}), writeParams(t.ModelOut, make([]float64, n))
	case "train":
		pushed, err := readParams(t.ModelIn, n)
		if err != nil {
			return trainer.Result{}, err
		}
		if t.Round == 1 {
			// Round 1 as our in-process model starts it: from zeros under
			// L-BFGS, and under gradient descent from the site's own
			// seeded initial model (learn.InitialParams: numpy's
			// RandomState(seed mod 2³²) normals × 0.01), not from the
			// campaign's shared one.
			pushed = nil
		}
		out, err := learn.UpdateSite(learn.SiteInput{
			Method: cfg.Method, Round: t.Round, Seed: uint32(t.Seed), Train: train, TopologyX: site.trainX,
			Pushed: pushed, Config: cfg.Site,
		})
		if err != nil {
			return trainer.Result{}, err
		}
		loss := cfg.Site.Model(train.NumFeatures()).Objective(out.Params, train, nil)
		_ = trainer.Progress(map[string]any{"round": t.Round, "done": true})
		return result(out.N, map[string]float64{"loss": loss}), writeParams(t.ModelOut, out.Params)
	case "evaluate":
		params, err := readParams(t.ModelIn, n)
		if err != nil {
			return trainer.Result{}, err
		}
		auc, acc, err := method.EvaluateSite(cfg.Site, params, test)
		if err != nil {
			return trainer.Result{}, err
		}
		return result(len(test.X), map[string]float64{"auc": auc, "accuracy": acc}), nil
	}
	return trainer.Result{}, fail(65, "unsupported_task", "task %q on a tabular site (its descriptor comes from its rows)", t.Task)
}

// imageSite is an image site's files as read.
type imageSite struct{ tr, te *dataset.Images }

// images runs a task on an image site.
func images(t trainer.Task, cfg method.Config) (trainer.Result, error) {
	site, err := load(append(append([]string(nil), t.TrainData...), t.TestData...), "", func() (imageSite, error) {
		tr, err := dataset.ReadIDX(t.TrainData[0], t.TrainData[1])
		if err != nil {
			return imageSite{}, fail(65, "train_data", "%v", err)
		}
		te, err := dataset.ReadIDX(t.TestData[0], t.TestData[1])
		if err != nil {
			return imageSite{}, fail(65, "test_data", "%v", err)
		}
		return imageSite{tr, te}, nil
	})
	if err != nil {
		return trainer.Result{}, err
	}
	tr, te := site.tr, site.te
	shape := nn.Shape{H: tr.H, W: tr.W, C: tr.C}
	p, err := method.PrepareDeepSite(t.Site, cfg, shape,
		nn.Data{N: tr.N, X: tr.Pixels, Labels: tr.Labels}, nn.Data{N: te.N, X: te.Pixels, Labels: te.Labels})
	if err != nil {
		return trainer.Result{}, fail(65, "prepare", "%v", err)
	}
	net, err := cfg.NewNetwork(p.Shape)
	if err != nil {
		return trainer.Result{}, fmt.Errorf("network: %w", err)
	}
	net.SetWorkers(1)
	n := net.NumParams()
	switch t.Task {
	case "init":
		net.Init(t.Seed)
		return result(p.Train.N, map[string]float64{}), writeParams32(t.ModelOut, net.Params())
	case "train":
		pushed, err := readParams32(t.ModelIn, n)
		if err != nil {
			return trainer.Result{}, err
		}
		sc := cfg.DeepSite
		sc.Train.Seed = t.Seed
		out, err := nn.UpdateSite(net, nn.SiteInput{Method: cfg.Method, Round: t.Round, Train: p.Train, Config: sc, Pushed: pushed})
		if err != nil {
			return trainer.Result{}, err
		}
		_ = trainer.Progress(map[string]any{"round": t.Round, "epochs": sc.Train.Epochs})
		// The trained model's own score, which the worker records as the
		// site's accuracy before aggregation.
		auc, acc, err := method.EvaluateDeep(net, out.Params, p.Test)
		if err != nil {
			return trainer.Result{}, err
		}
		return result(out.N, map[string]float64{"loss": out.MeanLoss, "auc": auc, "accuracy": acc}),
			writeParams32(t.ModelOut, out.Params)
	case "evaluate":
		params, err := readParams32(t.ModelIn, n)
		if err != nil {
			return trainer.Result{}, err
		}
		auc, acc, err := method.EvaluateDeep(net, params, p.Test)
		if err != nil {
			return trainer.Result{}, err
		}
		return result(p.Test.N, map[string]float64{"auc": auc, "accuracy": acc}), nil
	case "embed":
		params, err := readParams32(t.ModelIn, n)
		if err != nil {
			return trainer.Result{}, err
		}
		for _, r := range t.Rows {
			if r < 0 || r >= p.Train.N {
				return trainer.Result{}, fail(65, "rows", "row %d of %d training images", r, p.Train.N)
			}
		}
		x, err := method.DeepActivations(net, params, p.Train, t.Rows)
		if err != nil {
			return trainer.Result{}, err
		}
		k := net.PenultimateSize()
		data := make([]byte, 4*len(x)*k)
		for i, row := range x {
			for j, v := range row {
				binary.LittleEndian.PutUint32(data[4*(i*k+j):], math.Float32bits(float32(v)))
			}
		}
		f := &safetensors.File{Tensors: []safetensors.Tensor{{Name: "embeddings", DType: safetensors.F32, Shape: []int{len(x), k}, Data: data}}}
		b, err := safetensors.Encode(f)
		if err != nil {
			return trainer.Result{}, err
		}
		return result(len(x), map[string]float64{}), os.WriteFile(t.EmbedOut, b, 0o600)
	}
	return trainer.Result{}, fail(65, "unsupported_task", "task %q", t.Task)
}

// readModel reads the one tensor "params" of n values of the input model;
// anything else is a bad input model (exit 66).
func readModel(path string, n int, dtype safetensors.DType) (safetensors.Tensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return safetensors.Tensor{}, fail(66, "model_in", "%v", err)
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return safetensors.Tensor{}, fail(66, "model_in", "%v", err)
	}
	if len(f.Tensors) != 1 || f.Tensors[0].Name != "params" || f.Tensors[0].DType != dtype ||
		len(f.Tensors[0].Shape) != 1 || f.Tensors[0].Shape[0] != n {
		return safetensors.Tensor{}, fail(66, "model_layout", "want one %s tensor \"params\" of %d values", dtype, n)
	}
	return f.Tensors[0], nil
}

func readParams(path string, n int) ([]float64, error) {
	t, err := readModel(path, n, safetensors.F64)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out, nil
}

func readParams32(path string, n int) ([]float32, error) {
	t, err := readModel(path, n, safetensors.F32)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

func writeModel(path string, t safetensors.Tensor) error {
	b, err := safetensors.Encode(&safetensors.File{Tensors: []safetensors.Tensor{t}})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func writeParams(path string, p []float64) error {
	data := make([]byte, 8*len(p))
	for i, v := range p {
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	}
	return writeModel(path, safetensors.Tensor{Name: "params", DType: safetensors.F64, Shape: []int{len(p)}, Data: data})
}

func writeParams32(path string, p []float32) error {
	data := make([]byte, 4*len(p))
	for i, v := range p {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	return writeModel(path, safetensors.Tensor{Name: "params", DType: safetensors.F32, Shape: []int{len(p)}, Data: data})
}
