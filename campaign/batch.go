package campaign

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/ptopofl/ptopofl/pipeline"
)

// Job is one campaign of a batch, with the label its row carries.
type Job struct {
	Label string
	Spec  pipeline.CampaignSpec
}

// Variant is one campaign of a batch as the user asks for it: a label, a
// method and hyper-parameter overrides (NAME=VALUE) over the batch's.
type Variant struct {
	Label  string
	Method string
	Set    []string
}

// BuildJobs builds and validates the spec of every variant from the
// campaign file cf (may be nil), the options o they share and the
// federation fed (may be nil), as BuildSpec does for one campaign; an
// error names the variant's label.
func BuildJobs(cf *File, o SpecOptions, fed *Federation, variants []Variant) ([]Job, error) {
	var jobs []Job
	for _, v := range variants {
		vo := o
		vo.Method, vo.Given = v.Method, maps.Clone(o.Given)
		if vo.Given == nil {
			vo.Given = map[string]bool{}
		}
		vo.Given["method"] = true
		vo.Set = append(slices.Clone(o.Set), v.Set...)
		spec, err := BuildSpec(cf, vo, fed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Label, err)
		}
		if fed != nil {
			if err := CheckSites(spec, fed); err != nil {
				return nil, err
			}
		}
		jobs = append(jobs, Job{Label: v.Label, Spec: spec})
	}
	return jobs, nil
}

// ExecuteAll runs the jobs' campaigns, parallel at a time, on this
// service's workers, and waits for all of them. Their progress lines go to
// progress (nil: silent), which must be safe for concurrent use (see
// LockedWriter); done, if not
// nil, is called (one call at a time) as each job ends. Result i and error
// i belong to job i; a result's Label is its job's.
func (s *Service) ExecuteAll(ctx context.Context, jobs []Job, parallel int, progress io.Writer, done func(i int, err error)) ([]Result, []error) {
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var doneMu sync.Mutex
	for i, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := s.Execute(ctx, job.Spec, progress, false)
			r.Label = job.Label
			results[i], errs[i] = r, err
			if done != nil {
				doneMu.Lock()
				done(i, err)
				doneMu.Unlock()
			}
		}()
	}
	wg.Wait()
	return results, errs
}

// LockedWriter is w with every Write under mu, so that goroutines sharing
// w never interleave within a line.
func LockedWriter(w io.Writer, mu *sync.Mutex) io.Writer {
	return lockedWriter{w: w, mu: mu}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
