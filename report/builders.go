package report

import "errors"

var errNotImplemented = errors.New("report: not implemented yet")

// Table1 builds the comparison report (Table 1, Figs. 2 and 3).
func Table1(in Table1Input) (*Report, error) { return nil, errNotImplemented }

// Adversarial builds the robustness report (Fig. 4).
func Adversarial(in AdversarialInput) (*Report, error) { return nil, errNotImplemented }

// Stability builds the stability and drift report (Fig. 5).
func Stability(in StabilityInput) (*Report, error) { return nil, errNotImplemented }

// Privacy builds the privacy report (Fig. 6).
func Privacy(in PrivacyInput) (*Report, error) { return nil, errNotImplemented }

// Ablation builds the ablation report (Fig. 7).
func Ablation(in AblationInput) (*Report, error) { return nil, errNotImplemented }
