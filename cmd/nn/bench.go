package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/nn/sgemm"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

const benchUsage = `usage: nn bench --model convnet2|cnn|mlp|resnet [--classes K] [--batch 64] [--steps 10] [--dp [--clip C] [--noise Z]] [--format json|text]

Times full training steps (forward, backward and an SGD-with-momentum update)
of a network on random 28×28×1 inputs (32×32×3 for resnet) and prints, as
one JSON object or a line of text, the model, its parameter count and the
minimum and median step time in milliseconds over --steps timed steps (after
--warmup untimed ones). convnet2 is LEAF's ConvNet-2, cnn its layout at
--width channels without a hidden dense layer (the deep-small CNN at width
16), mlp is 784-256-K, resnet the GroupNorm ResNet of --width and --depth.

With --dp each step is a DP-SGD step (package nn's DPConfig): the batch is
taken as the step's Poisson sample, every example's gradient is clipped to
norm --clip and Gaussian noise of --noise times --clip is added to the sum,
drawn by the sites' own mechanism (package privacy/noise: a ChaCha8 stream
keyed by a fixed bench secret, the Gaussian snapped to a power-of-two grid,
on one thread as a site draws it), so that the time is a site's.

flags:
`

// benchResult is the JSON object bench prints; scripts rely on model,
// params, step_ms_min and step_ms_median.
type benchResult struct {
	Model        string  `json:"model"`
	Params       int     `json:"params"`
	Classes      int     `json:"classes"`
	Batch        int     `json:"batch"`
	Steps        int     `json:"steps"`
	Workers      int     `json:"workers"`
	Asm          bool    `json:"asm"`
	StepMsMin    float64 `json:"step_ms_min"`
	StepMsMedian float64 `json:"step_ms_median"`
	// DP is set for DP-SGD steps, with their clipping norm and noise
	// multiplier.
	DP    bool    `json:"dp"`
	Clip  float64 `json:"clip,omitempty"`
	Noise float64 `json:"noise,omitempty"`
}

func runBench(args []string, out *bytes.Buffer, stderr io.Writer) error {
	fs := newFlagSet("bench", benchUsage, stderr)
	model := fs.String("model", "", "`network`: convnet2, cnn, mlp or resnet")
	classes := fs.Int("classes", 62, "number of `classes`")
	batch := fs.Int("batch", 64, "minibatch `size`")
	steps := fs.Int("steps", 10, "timed `steps`")
	warmup := fs.Int("warmup", 2, "untimed `steps` before timing")
	format := fs.String("format", "json", "output `format`: json or text")
	workers := fs.Int("workers", 0, "`goroutines` per step (0: GOMAXPROCS)")
	width := fs.Int("width", 16, "resnet first-stage or cnn first-convolution `channels`")
	depth := fs.Int("depth", 2, "resnet `blocks` per stage")
	dp := fs.Bool("dp", false, "time DP-SGD steps (per-example clipping and noise)")
	clip := fs.Float64("clip", 1, "DP-SGD clipping `norm` C (with --dp)")
	noise := fs.Float64("noise", 1, "DP-SGD noise `multiplier` z (with --dp)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := nn.Config{Arch: nn.Arch(*model), Input: nn.Shape{H: 28, W: 28, C: 1}, Classes: *classes}
	switch cfg.Arch {
	case nn.ConvNet2:
	case nn.CNN:
		cfg.Width = *width
	case nn.MLP:
		cfg.Hidden = []int{256}
	case nn.ResNet:
		cfg.Input = nn.Shape{H: 32, W: 32, C: 3}
		cfg.Width, cfg.Depth = *width, *depth
	case "":
		return fmt.Errorf("--model is required: convnet2, cnn, mlp or resnet")
	default:
		return fmt.Errorf("--model %q: want convnet2, cnn, mlp or resnet", *model)
	}
	switch {
	case *batch < 1:
		return fmt.Errorf("--batch %d: want at least 1", *batch)
	case *steps < 1:
		return fmt.Errorf("--steps %d: want at least 1", *steps)
	case *warmup < 0:
		return fmt.Errorf("--warmup %d: want at least 0", *warmup)
	case *workers < 0:
		return fmt.Errorf("--workers %d: want at least 0", *workers)
	case *format != "json" && *format != "text":
		return fmt.Errorf("--format %q: want json or text", *format)
	}
	net, err := nn.New(cfg)
	if err != nil {
		return fmt.Errorf("--model %s: %w", *model, err)
	}
	net.SetWorkers(*workers)
	w := *workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	net.Init(1)
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, *batch*net.InputSize())
	for i := range x {
		x[i] = float32(rng.Float64())
	}
	labels := make([]int, *batch)
	for i := range labels {
		labels[i] = rng.IntN(*classes)
	}
	tc := nn.TrainConfig{Optimizer: nn.SGD, LR: 0.01, Momentum: 0.9, Epochs: 1, BatchSize: *batch}
	if *dp {
		tc.DP = &nn.DPConfig{Clip: *clip, NoiseMultiplier: *noise, Random: benchStream()}
	}
	tr, err := nn.NewTrainer(net, tc, nn.Terms{})
	if err != nil {
		return fmt.Errorf("--clip %v, --noise %v: %w", *clip, *noise, err)
	}
	for range *warmup {
		tr.Step(x, labels, nil)
	}
	times := make([]float64, *steps)
	for i := range times {
		start := time.Now()
		tr.Step(x, labels, nil)
		times[i] = float64(time.Since(start).Nanoseconds()) / 1e6
	}
	slices.Sort(times)
	median := times[len(times)/2]
	if len(times)%2 == 0 {
		median = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
	res := benchResult{
		Model: *model, Params: net.NumParams(), Classes: *classes, Batch: *batch, Steps: *steps,
		Workers: w, Asm: sgemm.HasAsm, StepMsMin: times[0], StepMsMedian: median,
	}
	kind := "step"
	if *dp {
		res.DP, res.Clip, res.Noise = true, *clip, *noise
		kind = fmt.Sprintf("DP-SGD step (C %g, z %g)", *clip, *noise)
	}
	if *format == "text" {
		fmt.Fprintf(out, "%s: %d parameters, batch %d, %d workers: %s %.2f ms min, %.2f ms median over %d steps\n",
			res.Model, res.Params, res.Batch, res.Workers, kind, res.StepMsMin, res.StepMsMedian, res.Steps)
		return nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	out.Write(b)
	out.WriteByte('\n')
	return nil
}

// benchStream is the noise stream of a DP bench step: the mechanism a site
// uses (privacy/noise), keyed by a fixed secret, which is fine for timing.
func benchStream() *noise.Stream {
	secret, err := noise.SecretFromBytes([]byte("ptopofl bench secret, not a key!"))
	if err != nil {
		panic(err)
	}
	return secret.Stream(noise.Key{Campaign: "bench", Purpose: "train"})
}
