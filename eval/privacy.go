package eval

import (
	"fmt"
	"math"
)

// DescriptorDim is the length m of the pTopoFL topological descriptor
// (paper §3.1: 20 + 20 Betti-curve samples and 8 summary statistics).
const DescriptorDim = 48

// CompressionFactor is the paper's estimated compression factor α_c ≈ 0.1
// of the persistent-homology map (paper §3.6, Eq. (11)).
const CompressionFactor = 0.1

// GradientRisk returns the reconstruction risk of a site that sends a
// gradient (or model) of p parameters computed on n samples in R^d,
//
//	ρ_grad = min(1, p / (n·d)),
//
// paper §3.6, Eq. (10). It returns an error unless n, d and p are
// positive.
func GradientRisk(n, d, p int) (float64, error) {
	if n < 1 || d < 1 || p < 1 {
		return 0, fmt.Errorf("gradient risk: n = %d, d = %d, p = %d, want all positive", n, d, p)
	}
	return math.Min(1, float64(p)/(float64(n)*float64(d))), nil
}

// DescriptorRisk returns the reconstruction risk of a site that sends an
// m-dimensional topological descriptor of n samples in R^d,
//
//	ρ_topo = m / (n·d) · α_c,
//
// paper §3.6, Eq. (11), with α_c the compression factor (the paper
// uses CompressionFactor). Unlike ρ_grad the paper does not cap ρ_topo at
// 1; with α_c ≤ 1 it exceeds 1 only when m·α_c > n·d. It returns an error
// unless n, d and m are positive and α_c is in (0, 1].
func DescriptorRisk(n, d, m int, alpha float64) (float64, error) {
	if n < 1 || d < 1 || m < 1 {
		return 0, fmt.Errorf("descriptor risk: n = %d, d = %d, m = %d, want all positive", n, d, m)
	}
	if !(alpha > 0 && alpha <= 1) {
		return 0, fmt.Errorf("descriptor risk: compression factor α_c = %v, want a value in (0, 1]", alpha)
	}
	return float64(m) / (float64(n) * float64(d)) * alpha, nil
}

// MutualInformationProxy returns the paper's mutual-information proxy, in
// bits, of transmitting dim numbers with compression factor alpha,
//
//	log2(1 + dim·α_c),
//
// paper Fig. 6 (B) and §4.6. Gradients use α_c = 1 (log2(1+p), e.g.
// log2(22) ≈ 4.5 bits for p = 21); descriptors use CompressionFactor
// (log2(1 + 48·0.1) = log2(5.8) ≈ 2.5 bits). It returns an error unless dim
// is positive and alpha is in (0, 1].
func MutualInformationProxy(dim int, alpha float64) (float64, error) {
	if dim < 1 {
		return 0, fmt.Errorf("mutual information proxy: dim = %d, want positive", dim)
	}
	if !(alpha > 0 && alpha <= 1) {
		return 0, fmt.Errorf("mutual information proxy: compression factor α_c = %v, want a value in (0, 1]", alpha)
	}
	return math.Log2(1 + float64(dim)*alpha), nil
}

// PrivacySettings are the dimensions the privacy figures depend on besides
// the site sizes.
type PrivacySettings struct {
	// Features is the data dimension d.
	Features int
	// ModelParams is the number p of parameters a gradient-sharing site
	// sends; for logistic regression it is Features + 1.
	ModelParams int
	// DescriptorDim is the descriptor length m (DescriptorDim for pTopoFL).
	DescriptorDim int
	// Compression is α_c (CompressionFactor in the paper).
	Compression float64
}

// DefaultPrivacySettings returns the paper's settings for a logistic model
// on d features: p = d + 1, m = 48, α_c = 0.1.
func DefaultPrivacySettings(d int) PrivacySettings {
	return PrivacySettings{Features: d, ModelParams: d + 1, DescriptorDim: DescriptorDim, Compression: CompressionFactor}
}

// SitePrivacy holds the privacy figures of one site.
type SitePrivacy struct {
	Site           string
	N              int
	GradientRisk   float64
	DescriptorRisk float64
}

// PrivacyReport holds the privacy figures of a federation (paper §4.6 and
// Fig. 6): per-site risks, their unweighted means, the ratio of the means,
// and the two mutual-information proxies, which do not depend on n.
type PrivacyReport struct {
	Settings           PrivacySettings
	Sites              []SitePrivacy
	MeanGradientRisk   float64
	MeanDescriptorRisk float64
	// RiskRatio is MeanDescriptorRisk / MeanGradientRisk; the paper reports
	// ≈ 0.22, a factor-of-4.5 reduction.
	RiskRatio    float64
	GradientMI   float64
	DescriptorMI float64
}

// Privacy computes the privacy figures for sites of the given training-set
// sizes, the way the authors' experiment E5 does: n is each site's number
// of training rows, d the number of features, p the model size. names,
// if non-nil, labels the sites and must have one entry per size. It
// returns an error for an empty federation or invalid settings.
func Privacy(names []string, sizes []int, s PrivacySettings) (PrivacyReport, error) {
	if len(sizes) == 0 {
		return PrivacyReport{}, fmt.Errorf("privacy: no sites")
	}
	if names != nil && len(names) != len(sizes) {
		return PrivacyReport{}, fmt.Errorf("privacy: %d names for %d sites", len(names), len(sizes))
	}
	r := PrivacyReport{Settings: s}
	var err error
	if r.GradientMI, err = MutualInformationProxy(s.ModelParams, 1); err != nil {
		return PrivacyReport{}, fmt.Errorf("privacy: %w", err)
	}
	if r.DescriptorMI, err = MutualInformationProxy(s.DescriptorDim, s.Compression); err != nil {
		return PrivacyReport{}, fmt.Errorf("privacy: %w", err)
	}
	for k, n := range sizes {
		sp := SitePrivacy{Site: fmt.Sprintf("site%d", k), N: n}
		if names != nil {
			sp.Site = names[k]
		}
		if sp.GradientRisk, err = GradientRisk(n, s.Features, s.ModelParams); err != nil {
			return PrivacyReport{}, fmt.Errorf("privacy: site %s: %w", sp.Site, err)
		}
		if sp.DescriptorRisk, err = DescriptorRisk(n, s.Features, s.DescriptorDim, s.Compression); err != nil {
			return PrivacyReport{}, fmt.Errorf("privacy: site %s: %w", sp.Site, err)
		}
		r.MeanGradientRisk += sp.GradientRisk
		r.MeanDescriptorRisk += sp.DescriptorRisk
		r.Sites = append(r.Sites, sp)
	}
	r.MeanGradientRisk /= float64(len(sizes))
	r.MeanDescriptorRisk /= float64(len(sizes))
	r.RiskRatio = r.MeanDescriptorRisk / r.MeanGradientRisk
	return r, nil
}

// FederationPrivacy computes Privacy for a generated federation from its
// sites' training sizes, with the paper's settings for a logistic model on
// its features (DefaultPrivacySettings) and descriptorDim numbers sent
// per site: DescriptorDim for the paper's descriptor, or the length of an
// extended descriptor (tda.ExtendedDescriptorLen with the label-aware
// summary). Errors are Privacy's (descriptorDim must be positive).
func FederationPrivacy(f Federation, descriptorDim int) (PrivacyReport, error) {
	sizes := make([]int, len(f.Sites))
	for i, s := range f.Sites {
		sizes[i] = len(s.YTrain)
	}
	set := DefaultPrivacySettings(f.Features)
	set.DescriptorDim = descriptorDim
	return Privacy(f.SiteNames(), sizes, set)
}
