// Package nn is the deep-model core of a federated site: multi-class image
// classifiers (a multilayer perceptron, LEAF's ConvNet-2 and a small ResNet
// with GroupNorm) whose parameters are one flat float32 slab, softmax
// cross-entropy, a deterministic minibatch trainer (SGD with momentum, Adam)
// and the site-side update of every federated method on top of it (FedAvg,
// FedProx, SCAFFOLD, pFedMe, pTopoFL's sample weights, local-only).
//
// Every layer's parameters and gradients are views into two slabs,
// Network.Params and Network.Grad, so that aggregation averages, blends and
// corrects models as flat vectors without copying or knowing a shape.
//
// Activations are stored NHWC (sample, row, column, channel), row-major, as
// float32. Convolutions run as im2col followed by a matrix product in
// package sgemm, whose AVX2/FMA kernel makes a ConvNet-2 training step
// comparable in speed to PyTorch's on the CPU.
//
// Results are reproducible bit for bit: initialisation draws from a PCG
// generator seeded by the caller, minibatch order from another, and every
// computation that is split across goroutines is split so that each output
// is computed by one goroutine in a fixed order (per sample, per chunk of
// samples of a convolution, or per output tile of a matrix product), with
// cross-sample sums (bias and normalisation gradients, the loss) reduced
// serially in sample order and convolution weight gradients computed per
// chunk (chunk size from the batch size and the layer's shape alone) and
// summed in chunk order. A training run gives
// the same bits on 1 or 2 threads. It gives them on any machine whose CPU has
// AVX2 and FMA (sgemm.HasAsm); the portable kernel used elsewhere rounds
// differently (no fused multiply-add), so a campaign that must replay bit
// for bit should run its sites on one kind.
//
// With TrainConfig.DP set, training is DP-SGD (Abadi et al. 2016): Poisson
// samples, every example's gradient clipped to a norm, Gaussian noise on
// the sum from the caller's secret stream (DPRandom), for every method's
// site update; DPUse gives a round's releases to the caller's privacy
// accountant. Per-example clipping costs one forward and one backward pass
// (dpclip.go), so a DP step costs little more than a plain one. The
// accountant, the noise mechanism and the secret stream are not here.
//
// The package is pure computation: no files, no servers, no global state.
// Package dataset reads image files; a pipeline passes their pixels here.
package nn
