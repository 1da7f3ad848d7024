package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/nn"
)

// dataFlags are the flags train and eval share: which network, and which
// image files in which format.
type dataFlags struct {
	model, format, files, labels, hidden string
	classes, width, depth, limit         int
}

func (d *dataFlags) register(fs *flag.FlagSet, filesFlag string) {
	fs.StringVar(&d.model, "model", "", "`network`: convnet2, mlp or resnet")
	fs.StringVar(&d.format, "format", "", "image file `format`: idx, cifar10 or femnist")
	fs.StringVar(&d.files, filesFlag, "", "image `files`, comma-separated (idx: the image file)")
	fs.StringVar(&d.labels, "labels", "", "idx label `file`")
	fs.IntVar(&d.classes, "classes", 0, "number of `classes` (0: from the format; idx: 1 + the largest label)")
	fs.StringVar(&d.hidden, "hidden", "256", "mlp hidden `widths`, comma-separated")
	fs.IntVar(&d.width, "width", 16, "resnet first-stage `channels`")
	fs.IntVar(&d.depth, "depth", 2, "resnet `blocks` per stage")
	fs.IntVar(&d.limit, "limit", 0, "use only the first `n` images (0: all)")
}

// load reads the images and builds the network they fit.
func (d *dataFlags) load(filesFlag string) (*dataset.Images, *nn.Network, error) {
	if d.files == "" {
		return nil, nil, fmt.Errorf("--%s is required", filesFlag)
	}
	files := strings.Split(d.files, ",")
	var (
		im  *dataset.Images
		err error
	)
	switch d.format {
	case "idx":
		if d.labels == "" || len(files) != 1 {
			return nil, nil, fmt.Errorf("--format idx needs one image file and --labels")
		}
		im, err = dataset.ReadIDX(files[0], d.labels)
	case "cifar10":
		im, err = dataset.ReadCIFAR10(files...)
	case "femnist":
		im, err = dataset.ReadFEMNIST(files...)
	default:
		return nil, nil, fmt.Errorf("--format %q: want idx, cifar10 or femnist", d.format)
	}
	if err != nil {
		return nil, nil, err
	}
	if d.limit < 0 {
		return nil, nil, fmt.Errorf("--limit %d: want at least 0", d.limit)
	}
	if d.limit > 0 && d.limit < im.N {
		idx := make([]int, d.limit)
		for i := range idx {
			idx[i] = i
		}
		im = im.Subset(idx)
	}
	if d.classes > 0 {
		im.Classes = d.classes
	}
	if err := im.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", d.files, err)
	}
	cfg := nn.Config{Arch: nn.Arch(d.model), Input: nn.Shape{H: im.H, W: im.W, C: im.C}, Classes: im.Classes, Width: d.width, Depth: d.depth}
	if cfg.Arch == nn.MLP {
		for _, h := range strings.Split(d.hidden, ",") {
			if h == "" {
				continue
			}
			v, err := strconv.Atoi(h)
			if err != nil {
				return nil, nil, fmt.Errorf("--hidden %q: %w", d.hidden, err)
			}
			cfg.Hidden = append(cfg.Hidden, v)
		}
		if cfg.Hidden == nil {
			cfg.Hidden = []int{}
		}
	}
	net, err := nn.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--model %q: %w", d.model, err)
	}
	return im, net, nil
}

// Parameter files hold the slab as little-endian float32 values, nothing
// else; their length must match the network's parameter count.
func writeParams(path string, p []float32) error {
	b := make([]byte, 0, 4*len(p))
	for _, v := range p {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return os.WriteFile(path, b, 0o644)
}

func readParams(path string, p []float32) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) != 4*len(p) {
		return fmt.Errorf("%s: %d bytes, the network needs %d parameters (%d bytes): wrong --model or --classes?", path, len(b), len(p), 4*len(p))
	}
	for i := range p {
		p[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}
