package method

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/ptopofl/ptopofl/learn"
)

// TrainerParams is the trainer_params hyper-parameter: a JSON object that a
// campaign passes unchanged to the sites' own training program (model
// "external"), held as its compact JSON text so that Hyperparameters stays
// comparable. In a spec file it is written as the object itself; `--set
// trainer_params='{"hidden": 64}'` gives the same text.
type TrainerParams string

// MarshalJSON writes the object itself (its text is compact JSON already).
func (t TrainerParams) MarshalJSON() ([]byte, error) {
	if t == "" {
		return []byte("null"), nil
	}
	return []byte(t), nil
}

// UnmarshalJSON reads a JSON object, or a string that holds one (as `--set`
// gives it), into its compact text with the object's keys sorted, so that
// two spellings of the same object give the same spec hash. null is empty.
func (t *TrainerParams) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*t = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		b = []byte(s)
	}
	c, err := CanonicalTrainerParams(string(b))
	if err != nil {
		return err
	}
	*t = TrainerParams(c)
	return nil
}

// Object returns the parameters as a map (nil when empty).
func (t TrainerParams) Object() (map[string]any, error) {
	if t == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(t), &m); err != nil {
		return nil, fmt.Errorf("hyperparameters.trainer_params: %w", err)
	}
	return m, nil
}

// CanonicalTrainerParams returns text, which must be a JSON object, as
// compact JSON with its keys sorted (encoding/json sorts map keys), or an
// error saying what is wrong with it. An empty text stays empty.
func CanonicalTrainerParams(text string) (string, error) {
	if text == "" {
		return "", nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader([]byte(text)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		return "", fmt.Errorf("hyperparameters.trainer_params: want a JSON object, e.g. {\"hidden\": 64}")
	}
	if d.More() {
		return "", fmt.Errorf("hyperparameters.trainer_params: want one JSON object, found more after it")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("hyperparameters.trainer_params: %w", err)
	}
	return string(b), nil
}

// trainerName is what a trainer name may be: it travels in task queues'
// activity inputs and in error messages, so it is a short identifier.
var trainerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidTrainerName reports whether name may name a trainer.
func ValidTrainerName(name string) bool { return trainerName.MatchString(name) }

func checkTrainerName(v Value) string {
	if v.Text == "" || ValidTrainerName(v.Text) {
		return ""
	}
	return "must be a name of letters, digits, '.', '_' and '-' (at most 64), starting with a letter or digit"
}

func checkTrainerParams(v Value) string {
	if _, err := CanonicalTrainerParams(v.Text); err != nil {
		return err.Error()
	}
	return ""
}

// ExternalMethods are the methods a site's own program can run under the
// trainer protocol v1: those whose site update needs nothing but the model
// sent and the hyper-parameters (FedProx's proximal term is to that model).
// SCAFFOLD's control variates and pFedMe's personal models are state the
// protocol does not carry.
var ExternalMethods = []learn.Method{learn.FedAvg, learn.PTopoFL, learn.LocalOnly, learn.FedProx,
	learn.Median, learn.TrimmedMean, learn.Krum, learn.FoolsGold, learn.NormClip}

// validateExternal checks the settings of model "external": it needs a
// trainer, a method the protocol carries and no dp record (the program's
// releases are not accounted); trainer and trainer_params apply only to
// it.
func (h Hyperparameters) validateExternal(m learn.Method) error {
	if !h.IsExternal() {
		switch {
		case h.Trainer != "":
			return fmt.Errorf("hyperparameters.trainer = %q: applies only to model %q", h.Trainer, ModelExternal)
		case h.TrainerParams != "":
			return fmt.Errorf("hyperparameters.trainer_params: applies only to model %q", ModelExternal)
		}
		return nil
	}
	obj, err := h.TrainerParams.Object()
	if err != nil {
		return err
	}
	for _, p := range Params {
		if _, ok := obj[p.Name]; ok {
			return fmt.Errorf("hyperparameters.trainer_params.%s: is a hyper-parameter of the campaign; set it as one (the program gets it in task.json either way)", p.Name)
		}
	}
	if h.Trainer == "" {
		return fmt.Errorf("hyperparameters.trainer: model %q needs the name of the sites' program (--set trainer=NAME; each site worker maps it with --trainer NAME=COMMAND)", ModelExternal)
	}
	if !contains(ExternalMethods, m) {
		return fmt.Errorf("method %s: needs state the trainer protocol v1 does not carry (control variates, personal models), so model %q cannot run it; use one of %v", m, ModelExternal, ExternalMethods)
	}
	if h.IsDP() {
		return fmt.Errorf("hyperparameters.dp = %q: a site's own program does not report its releases to the privacy ledger in trainer protocol v1, so model %q cannot run under it", DPRecord, ModelExternal)
	}
	return nil
}
