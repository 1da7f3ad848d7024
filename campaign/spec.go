package campaign

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/safetensors"
)

// File is the YAML campaign file. Unknown keys are errors, so a typo
// is named instead of silently ignored. Durations are Go durations ("30m").
//
//	campaign: hc-ptopofl          # default: <method>-<hash of the spec and the federation>
//	method: ptopofl
//	preset: default               # or paper
//	rounds: 15
//	seed: 42
//	sites: [site0, site1, site2]  # default with --local: every <site>_train.csv of federation
//	federation: ../federation     # --local only: where the in-process site workers read (relative to this file)
//	min_sites: 2                  # quorum; 0 or absent: all sites (an int cannot tell them apart), negative: an error
//	rounds, min_sites and the method must fit: rounds <= 9999 (four-digit round keys); krum needs
//	min_sites >= 2·byzantine + 3; a non-zero trim_fraction must cut a model of min_sites (⌊trim_fraction·min_sites⌋ >= 1)
//	round_deadline: 30m
//	site_activity_timeout: 10m
//	train_heartbeat: 1m
//	continue_as_new_every: 10
//	bucket: ptopofl
//	descriptor_rows: {site0: [3, 17, 42]}
//	hyperparameters: {beta: 0.3, clusters: 2}   # JSON names of method.Hyperparameters
//	keep_site_models: 3           # retention: keep the site models of the last 3 rounds only; 0 or absent: all
//	site_records: {site0: {n_train: 150, n_test: 37}}   # dp record without a federation directory: each site's record counts
type File struct {
	Campaign string  `yaml:"campaign"` // the campaign's name; default <method>-<hash of the spec and the federation>
	Method   string  `yaml:"method"`   // ptopofl, fedavg, fedprox, scaffold, pfedme, local, median, trimmed-mean, krum, foolsgold, norm-clip
	Preset   string  `yaml:"preset"`   // the defaults: default, paper or a deep preset (docs/reference/parameters.md)
	Rounds   *int    `yaml:"rounds"`   // rounds to run, at most 9999
	Seed     *uint64 `yaml:"seed"`     // the campaign seed every random draw derives from
	// Sites names the sites, in order; with --local the default is every
	// <site>_train.csv of the federation.
	Sites []string `yaml:"sites"`
	// Federation is where the in-process site workers of --local read
	// (relative to this file).
	Federation string `yaml:"federation"`
	// MinSites is the quorum of every phase of a round; 0 or absent: all
	// sites.
	MinSites            int    `yaml:"min_sites"`
	RoundDeadline       string `yaml:"round_deadline"`        // how long a round waits for its sites (default 30m)
	SiteActivityTimeout string `yaml:"site_activity_timeout"` // one site activity attempt's limit before a retry
	TrainHeartbeat      string `yaml:"train_heartbeat"`       // how often a training activity must report that it lives
	ContinueAsNewEvery  int    `yaml:"continue_as_new_every"` // rounds per Temporal run before the history starts afresh
	Bucket              string `yaml:"bucket"`                // the S3 bucket of the artifacts
	// DescriptorRows fixes the rows each site subsamples for its
	// descriptor (to reproduce the authors' draws).
	DescriptorRows  map[string][]int `yaml:"descriptor_rows"`
	Hyperparameters map[string]any   `yaml:"hyperparameters"` // by their JSON names: docs/reference/parameters.md
	// Features are the feature columns every site's data must have, in
	// order (the spec's schema), for a starter that does not see the
	// sites' files; with a federation directory they are read from it.
	Features []string `yaml:"features"`
	// KeepSiteModels keeps the site models of the last N rounds only
	// (retention); 0 or absent: all.
	KeepSiteModels int `yaml:"keep_site_models"`
	// SiteRecords gives each site's numbers of training and test records,
	// which a dp record campaign's privacy plan needs, for a starter that
	// cannot see the sites' files (with a federation directory they are
	// counted from it).
	SiteRecords map[string]SiteRecordCounts `yaml:"site_records"`
	// InitialModel is a safetensors file every site starts from under
	// model "external" (relative to the campaign file's directory); the
	// starter uploads it and the spec holds its sha256.
	InitialModel string `yaml:"initial_model"`
}

// ReadFile decodes the campaign file at path strictly; errors wrap
// ErrInput and name the file, the line and the field.
func ReadFile(path string) (File, error) {
	var cf File
	err := decodeStrict(path, "campaign file", &cf)
	return cf, err
}

// decodeStrict decodes the YAML file at path into v (a pointer to a
// struct), an unknown key being an error; errors wrap ErrInput and name
// what (the kind of file), the file, the line and the field.
func decodeStrict(path, what string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return inputErrorf("%s: %v", what, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n ", "")
		msg = strings.ReplaceAll(msg, "in type "+strings.TrimPrefix(fmt.Sprintf("%T", v), "*"), "")
		return inputErrorf("%s %s: %s", what, path, strings.TrimSpace(msg))
	}
	return nil
}

// Load reads the campaign file at file (none when "") and discovers the
// federation: fedDir if given, else the file's federation, relative to the
// file so that the file works from any directory. Either result may be nil.
func Load(file, fedDir string) (*File, *Federation, error) {
	var cf *File
	if file != "" {
		c, err := ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		cf = &c
		if c.InitialModel != "" && !filepath.IsAbs(c.InitialModel) {
			c.InitialModel = filepath.Join(filepath.Dir(file), c.InitialModel)
		}
		if fedDir == "" && c.Federation != "" {
			fedDir = c.Federation
			if !filepath.IsAbs(fedDir) {
				fedDir = filepath.Join(filepath.Dir(file), fedDir)
			}
		}
	}
	if fedDir == "" {
		return cf, nil, nil
	}
	fed, err := DiscoverFederation(fedDir)
	if err != nil {
		return nil, nil, err
	}
	return cf, fed, nil
}

// SpecOptions are the command-line values that build a spec or override
// a campaign file's.
type SpecOptions struct {
	Campaign       string
	Method         string
	Preset         string
	Rounds         int
	Seed           uint64
	MinSites       int
	RoundDeadline  time.Duration
	Bucket         string
	DescriptorRows string          // JSON file: site → row indices
	Set            []string        // NAME=VALUE hyper-parameter overrides
	Given          map[string]bool // flag names the user set explicitly ("min-sites")
	KeepSiteModels int             // retention policy (pipeline.CampaignSpec.KeepSiteModels)
	InitialModel   string          // safetensors file (--initial-model; model "external")
}

// applyHyperparameters sets overrides (JSON names of
// method.Hyperparameters, values as a campaign file or --set gives them)
// over h; an unknown name or a value of the wrong kind is an error naming
// it. Names are applied in sorted order so the first error is the same on
// every run.
func applyHyperparameters(h *method.Hyperparameters, overrides map[string]any, where string) error {
	names := make([]string, 0, len(overrides))
	for k := range overrides {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		pv, err := paramValue(name, overrides[name])
		if err != nil {
			return inputErrorf("%s: %v", where, err)
		}
		if *h, err = h.Apply([]method.ParamValue{pv}); err != nil {
			return inputErrorf("%s: %v", where, err)
		}
	}
	return nil
}

// paramValue reads one override as YAML or --set gave it: a YAML number,
// or a text that is a number for numeric parameters and a name for the
// others. A quoted number in YAML ("0.3") is text; method.ParseValue reads
// it as the number it spells.
func paramValue(name string, v any) (method.ParamValue, error) {
	if name == "trainer_params" {
		// A JSON object: a YAML mapping in a file, its JSON text in --set.
		text, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				return method.ParamValue{}, fmt.Errorf("hyperparameter trainer_params: want an object: %v", err)
			}
			text = string(b)
		}
		c, err := method.CanonicalTrainerParams(text)
		if err != nil {
			return method.ParamValue{}, err
		}
		return method.ParamValue{Name: name, Text: c}, nil
	}
	switch x := v.(type) {
	case int:
		return method.ParseValue(name, strconv.Itoa(x))
	case float64:
		return method.ParseValue(name, strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		return method.ParseValue(name, x)
	}
	return method.ParamValue{}, fmt.Errorf("hyperparameter %s = %v: want a number or a name", name, v)
}

// parseSet turns ["beta=0", "clusters=1"] into a map of name to text.
func parseSet(kvs []string) (map[string]any, error) {
	m := map[string]any{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, inputErrorf("--set %q: want NAME=VALUE", kv)
		}
		m[k] = v
	}
	return m, nil
}

// BuildSpec assembles the spec from the campaign file cf (may be nil),
// then the options the user set, then the federation's sites (fed may be
// nil); applies defaults and validates, so that nothing starts from a bad
// spec. Every error wraps ErrInput.
func BuildSpec(cf *File, o SpecOptions, fed *Federation) (pipeline.CampaignSpec, error) {
	var s pipeline.CampaignSpec
	var overrides map[string]any
	if cf != nil {
		s.Campaign, s.Method, s.Preset = cf.Campaign, learn.Method(cf.Method), cf.Preset
		s.Rounds, s.Seed = 15, 42
		if cf.Rounds != nil {
			s.Rounds = *cf.Rounds
		}
		if cf.Seed != nil {
			s.Seed = *cf.Seed
		}
		for _, n := range cf.Sites {
			s.Sites = append(s.Sites, pipeline.Site{Name: n})
		}
		s.MinSites, s.ContinueAsNewEvery, s.Bucket = cf.MinSites, cf.ContinueAsNewEvery, cf.Bucket
		for _, d := range []struct {
			field string
			text  string
			dst   *time.Duration
		}{
			{"round_deadline", cf.RoundDeadline, &s.RoundDeadline},
			{"site_activity_timeout", cf.SiteActivityTimeout, &s.SiteActivityTimeout},
			{"train_heartbeat", cf.TrainHeartbeat, &s.TrainHeartbeat},
		} {
			if d.text == "" {
				continue
			}
			v, err := time.ParseDuration(d.text)
			if err != nil {
				return s, inputErrorf("campaign file: %s = %q: not a duration (e.g. 30m, 90s)", d.field, d.text)
			}
			*d.dst = v
		}
		s.DescriptorRows = cf.DescriptorRows
		s.KeepSiteModels = cf.KeepSiteModels
		overrides = cf.Hyperparameters
		if cf.Features != nil {
			s.Schema = &pipeline.DataSchema{Kind: pipeline.SchemaTable, Features: cf.Features, Label: dataset.DefaultLabelColumn}
		}
	} else {
		s.Rounds, s.Seed = o.Rounds, o.Seed
	}
	// Flags the user set win over the file.
	if o.Given["campaign"] || cf == nil {
		s.Campaign = o.Campaign
	}
	if o.Given["method"] || cf == nil {
		s.Method = learn.Method(o.Method)
	}
	if o.Given["preset"] || s.Preset == "" {
		s.Preset = o.Preset
	}
	if o.Given["rounds"] {
		s.Rounds = o.Rounds
	}
	if o.Given["seed"] {
		s.Seed = o.Seed
	}
	if o.Given["min-sites"] || cf == nil {
		if o.MinSites != 0 {
			s.MinSites = o.MinSites
		}
	}
	if o.Given["keep-site-models"] || cf == nil {
		s.KeepSiteModels = o.KeepSiteModels
	}
	if o.RoundDeadline != 0 {
		s.RoundDeadline = o.RoundDeadline
	}
	if s.Bucket == "" || o.Given["bucket"] {
		s.Bucket = o.Bucket
	}
	if o.DescriptorRows != "" {
		b, err := os.ReadFile(o.DescriptorRows)
		if err != nil {
			return s, inputErrorf("--descriptor-rows: %v", err)
		}
		var rows map[string][]int
		if err := json.Unmarshal(b, &rows); err != nil {
			return s, inputErrorf("--descriptor-rows %s: want a JSON object site → [row indices]: %v", o.DescriptorRows, err)
		}
		s.DescriptorRows = rows
	}
	if len(s.Sites) == 0 && fed != nil {
		for _, n := range fed.Sites {
			s.Sites = append(s.Sites, pipeline.Site{Name: n})
		}
	}
	if s.Method == "" {
		return s, inputErrorf("method: required (--method NAME or method: in the campaign file); want one of %v", learn.Methods)
	}
	if s.Preset == "" {
		s.Preset = method.Default
	}
	if slices.Contains(method.DeepPresets, s.Preset) && !o.Given["rounds"] && (cf == nil || cf.Rounds == nil) {
		// A deep preset without rounds given (--rounds, or rounds: in the
		// file): the preset's R (20 for deep-small, 100 for deep-c, ...),
		// not the tabular default of 15.
		s.Rounds = method.Rounds(s.Preset)
	}
	h := method.Defaults(s.Preset) // an unknown preset is named by Validate below
	if err := applyHyperparameters(&h, overrides, "campaign file: hyperparameters"); err != nil {
		return s, err
	}
	flagSet, err := parseSet(o.Set)
	if err != nil {
		return s, err
	}
	if err := applyHyperparameters(&h, flagSet, "--set"); err != nil {
		return s, err
	}
	s.Hyperparameters = method.DPDefaults(h, func(name string) bool {
		_, inFile := overrides[name]
		_, inFlags := flagSet[name]
		return inFile || inFlags
	})
	path := o.InitialModel
	if path == "" && cf != nil {
		path = cf.InitialModel
	}
	if path != "" {
		im, _, err := ReadInitialModel(path)
		if err != nil {
			return s, err
		}
		s.InitialModel = &im
	}
	if s.Campaign == "" {
		s.Campaign = defaultCampaignName(s, fed)
	}
	// No code version: the spec is the campaign's identity, which a rebuilt
	// binary does not change; every manifest records the version of the
	// binary that committed its round (activities.Server.CommitRound).
	// The schema is set after the name: it is read from the federation's
	// files, whose hash the name already holds, and a name that changed
	// with it would stop re-runs of campaigns started before it existed
	// from re-attaching.
	if s.Schema == nil && fed != nil && fed.Schema != nil {
		schema := *fed.Schema
		s.Schema = &schema
	}
	s = s.WithDefaults()
	var given map[string]SiteRecordCounts
	if cf != nil {
		given = cf.SiteRecords
	}
	s, _, err = PlanPrivacy(s, fed, given)
	if err != nil {
		return s, err
	}
	if err := s.Validate(); err != nil {
		if cf != nil {
			return s, inputErrorf("campaign file: %v", err)
		}
		return s, inputErrorf("%v", err)
	}
	return s, nil
}

// defaultCampaignName is "<method>-<12 hex>", a hash of the spec (without
// the code version) and of the federation's files: running the same thing
// again re-attaches to the same durable campaign instead of starting a
// second one, and anything that changes the result changes the name.
func defaultCampaignName(s pipeline.CampaignSpec, fed *Federation) string {
	s.CodeVersion = ""
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", s.WithDefaults().SpecHash())
	if fed != nil {
		fmt.Fprintf(h, "%s\n", fed.Hash)
	}
	return string(s.Method) + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// Federation is a directory of site files (dataset.DiscoverFederation):
// the sites in federation.json order when present, else natural order,
// and a hash over the site files' names and bytes.
type Federation struct {
	Dir   string
	Sites []string
	Hash  string
	// Schema is the feature columns most sites' training files have (see
	// dataset.Federation.Columns), with the default label column; nil when
	// no site's file names its columns and the label. SchemaDiffer lists
	// the sites whose files do not show those columns (see
	// dataset.FederationColumns.Differ).
	Schema       *pipeline.DataSchema
	SchemaDiffer []string
	// Images reports an image federation (for deep models).
	Images bool
}

// DiscoverFederation finds the sites of dir (CSV or parquet; the order
// matters, the paper preset seeds sites by position) and the feature
// columns they agree on.
func DiscoverFederation(dir string) (*Federation, error) {
	f, err := dataset.DiscoverFederation(dir)
	if err != nil {
		return nil, inputErrorf("--federation: %v", err)
	}
	fed := &Federation{Dir: f.Dir, Sites: f.Sites, Hash: f.Hash, Images: f.Images}
	if f.Images {
		// Image sites have no columns; the model's input shape is checked
		// against them instead (CheckSites).
		return fed, nil
	}
	// The starter's in-process workers read the default label column, so
	// that is the label the schema is read with.
	cols, err := f.Columns(dataset.DefaultLabelColumn)
	if err != nil {
		return nil, inputErrorf("--federation %s: %v", dir, err)
	}
	if cols.Features != nil {
		fed.Schema = &pipeline.DataSchema{Kind: pipeline.SchemaTable, Features: cols.Features, Label: dataset.DefaultLabelColumn}
		fed.SchemaDiffer = cols.Differ
	}
	return fed, nil
}

// CheckSites reports a site of spec that has no files in fed, and a model
// that does not fit the federation (an image network on tabular files, or
// logistic regression on images).
func CheckSites(spec pipeline.CampaignSpec, fed *Federation) error {
	have := map[string]bool{}
	for _, s := range fed.Sites {
		have[s] = true
	}
	switch deep := spec.Hyperparameters.IsDeep(); {
	case spec.Hyperparameters.IsExternal():
		// The sites' own program reads tables or images alike.
	case deep && !fed.Images:
		return inputErrorf("model %q is an image network, but %s holds tabular site files; give an image federation (bin/gendata fashion-mnist) or set model=logistic", spec.Hyperparameters.Model, fed.Dir)
	case !deep && fed.Images:
		return inputErrorf("%s holds images (<site>_train-images.idx); train an image network on it: --preset deep-small, or --set model=cnn", fed.Dir)
	}
	for i, s := range spec.Sites {
		if !have[s.Name] {
			return inputErrorf("sites[%d] %q: no %s_train.csv in %s", i, s.Name, s.Name, fed.Dir)
		}
	}
	return nil
}

// ReadInitialModel reads a campaign's initial model (model "external") and
// checks that it is a model: a safetensors file of F32 and F64 tensors
// whose values are finite. It returns the spec's record of it (sha256 and
// size) and the file's bytes, which UploadInitialModel stores.
func ReadInitialModel(path string) (pipeline.InitialModel, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pipeline.InitialModel{}, nil, inputErrorf("initial_model: %v", err)
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return pipeline.InitialModel{}, nil, inputErrorf("initial_model %s: %v", path, err)
	}
	params, _, err := safetensors.Flatten(f)
	if err != nil {
		return pipeline.InitialModel{}, nil, inputErrorf("initial_model %s: %v", path, err)
	}
	if len(params) == 0 {
		return pipeline.InitialModel{}, nil, inputErrorf("initial_model %s: no parameters", path)
	}
	for i, v := range params {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return pipeline.InitialModel{}, nil, inputErrorf("initial_model %s: parameter %d is not finite", path, i)
		}
	}
	sum := sha256.Sum256(b)
	return pipeline.InitialModel{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b))}, b, nil
}

// UploadInitialModel stores the initial model file at path that spec names
// (ReadInitialModel) by its sha256 (artifact.InitialModelFileKey), where
// round 1 reads it; nothing when spec names none. A file that changed since
// the spec was built is refused.
func (s *Service) UploadInitialModel(ctx context.Context, spec pipeline.CampaignSpec, path string) error {
	if spec.InitialModel == nil {
		return nil
	}
	im, b, err := ReadInitialModel(path)
	if err != nil {
		return err
	}
	if im != *spec.InitialModel {
		return inputErrorf("initial_model %s: the file changed while the campaign was being prepared (sha256 %s, the spec has %s)", path, im.SHA256, spec.InitialModel.SHA256)
	}
	ref, err := s.Store.Put(ctx, artifact.InitialModelFileKey(im.SHA256), b)
	if err != nil {
		return fmt.Errorf("upload initial_model %s: %w", path, err)
	}
	if ref.SHA256 != im.SHA256 {
		return fmt.Errorf("upload initial_model %s: stored sha256 %s, want %s", path, ref.SHA256, im.SHA256)
	}
	return nil
}
