// Package theory checks the pTopoFL paper's theorems on the system itself:
// Eq. 4 (diagram stability) on random and real point clouds; Thm 3.3 and
// Cor. 3.4 (clustering stability) by perturbing real sites' descriptors
// and rows through the system's clustering; Thm 3.5 (suppression of
// adversaries), Thm 3.6 (variance reduction) and Prop. 3.11 (effective
// heterogeneity) on the weights the system's aggregation actually applied
// in its campaigns, read off the stored models (RecoverWeights); Thm 3.7
// (information contraction) by one membership attack on the descriptor,
// the model and the gradient of the same site at matched settings, with
// the accountant's ε of each release under dp record; Thm 3.9 and the
// appendix's Lemma (convergence) under the theorem's own assumptions,
// local minibatch SGD on L2-regularised logistic regression with the
// system's Eq. 12 weights. Measure runs every check on Inputs (which
// package campaign gathers from the theory experiment's sweep) and Judge
// states each statement's verdict.
//
// It knows nothing of Temporal, S3 or files: rows, descriptors and models
// in, numbers and verdicts out.
package theory
