package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/nn"
)

const trainUsage = `usage: nn train --model convnet2|mlp|resnet --format idx|cifar10|femnist --train FILES [--labels FILE] --out PARAMS [flags]

Trains a network from a seeded initialisation on image files and writes its
parameters to PARAMS (little-endian float32, the network's flat slab). Prints
one JSON object: model, params, samples, steps, mean_loss (last epoch) and
train_accuracy.

flags:
`

func runTrain(args []string, out *bytes.Buffer, stderr io.Writer) error {
	fs := newFlagSet("train", trainUsage, stderr)
	var d dataFlags
	d.register(fs, "train")
	outPath := fs.String("out", "", "`file` to write the parameters to")
	optimizer := fs.String("optimizer", "sgd", "`optimizer`: sgd or adam")
	lr := fs.Float64("lr", 0.01, "learning `rate`")
	momentum := fs.Float64("momentum", 0.9, "SGD `momentum`")
	decay := fs.Float64("weight-decay", 0, "L2 weight `decay`")
	epochs := fs.Int("epochs", 1, "`epochs`")
	batch := fs.Int("batch", 64, "minibatch `size`")
	seed := fs.Uint64("seed", 1, "`seed` of the initialisation and the minibatch order")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *outPath == "" {
		return fmt.Errorf("--out is required")
	}
	cfg := nn.TrainConfig{Optimizer: nn.Optimizer(*optimizer), LR: *lr, Momentum: *momentum, WeightDecay: *decay, Epochs: *epochs, BatchSize: *batch, Seed: *seed}
	if *optimizer == "adam" {
		cfg.Momentum = 0
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	im, net, err := d.load("train")
	if err != nil {
		return err
	}
	net.Init(*seed)
	data := nn.Data{N: im.N, X: im.Pixels, Labels: im.Labels}
	res, err := nn.Train(net, data, cfg, nn.Terms{})
	if err != nil {
		return err
	}
	acc, err := net.Accuracy(data)
	if err != nil {
		return err
	}
	if err := writeParams(*outPath, net.Params()); err != nil {
		return fmt.Errorf("write parameters: %w", err)
	}
	return json.NewEncoder(out).Encode(map[string]any{
		"model": d.model, "params": net.NumParams(), "samples": im.N, "steps": res.Steps,
		"mean_loss": res.MeanLoss, "train_accuracy": acc,
	})
}

const evalUsage = `usage: nn eval --model convnet2|mlp|resnet --format idx|cifar10|femnist --params PARAMS --test FILES [--labels FILE]

Loads parameters written by "nn train" into the same network and prints one
JSON object with the top-1 accuracy on the test images.

flags:
`

func runEval(args []string, out *bytes.Buffer, stderr io.Writer) error {
	fs := newFlagSet("eval", evalUsage, stderr)
	var d dataFlags
	d.register(fs, "test")
	params := fs.String("params", "", "parameter `file` written by nn train")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *params == "" {
		return fmt.Errorf("--params is required")
	}
	im, net, err := d.load("test")
	if err != nil {
		return err
	}
	if err := readParams(*params, net.Params()); err != nil {
		return err
	}
	acc, err := net.Accuracy(nn.Data{N: im.N, X: im.Pixels, Labels: im.Labels})
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(map[string]any{"model": d.model, "samples": im.N, "accuracy": acc})
}
