package devstack

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseServices(t *testing.T) {
	for i, c := range []struct {
		in      string
		want    []Service
		wantErr string
	}{
		{"", nil, ""},    // 0: the default, both
		{"all", nil, ""}, // 1
		{"s3", []Service{ServiceS3}, ""},
		{"temporal", []Service{ServiceTemporal}, ""},
		{"temporal, s3,temporal", []Service{ServiceTemporal, ServiceS3}, ""}, // 4: spaces and repeats
		{"postgres", nil, `service "postgres"`},
		{"s3,", nil, `service ""`},
	} {
		got, err := ParseServices(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%d: ParseServices(%q) error %v, want one containing %q", i, c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%d: ParseServices(%q) = %v, %v; want %v", i, c.in, got, err, c.want)
		}
	}
}

// TestServicesApart runs S3 and Temporal as two stacks over one data
// directory, as two devstack processes do in the outage tests: each answers,
// each writes its own endpoints file, and a second stack for a service
// already running over the directory is refused by that service's lock.
func TestServicesApart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	dir := t.TempDir()
	ctx := context.Background()
	s3cfg := Config{Dir: dir, S3Port: freePortRun(t, 1), Services: []Service{ServiceS3}, ReadyTimeout: 2 * time.Minute}
	s3only, err := Start(ctx, s3cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s3only.Stop()
	tcfg := Config{Dir: dir, TemporalPort: freePortRun(t, 4), Services: []Service{ServiceTemporal}, ReadyTimeout: 2 * time.Minute}
	tonly, err := Start(ctx, tcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tonly.Stop()

	if ep := s3only.Endpoints(); ep.S3URL == "" || ep.Temporal != "" || ep.CredentialsFile == "" {
		t.Errorf("S3-only endpoints %+v", ep)
	}
	if ep := tonly.Endpoints(); ep.Temporal == "" || ep.S3URL != "" || ep.CredentialsFile != "" {
		t.Errorf("Temporal-only endpoints %+v", ep)
	}
	for svc, st := range map[Service]*Stack{ServiceS3: s3only, ServiceTemporal: tonly} {
		var onDisk Endpoints
		b, err := os.ReadFile(filepath.Join(dir, PartialEndpointsFile(svc)))
		if err != nil || json.Unmarshal(b, &onDisk) != nil || onDisk != st.Endpoints() {
			t.Errorf("%s: %s holds %s (err %v), want %+v", svc, PartialEndpointsFile(svc), b, err, st.Endpoints())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, EndpointsFile)); err == nil {
		t.Errorf("a stack of one service wrote %s, which clients read as a whole stack", EndpointsFile)
	}
	if err := WaitTemporal(ctx, tonly.Endpoints().Temporal, DefaultNamespace, time.Minute); err != nil {
		t.Error(err)
	}

	// Each service's lock refuses a second server of that service, and a
	// whole stack, before anything is started.
	for i, c := range []Config{
		{Dir: dir, Services: []Service{ServiceTemporal}},
		{Dir: dir, Services: []Service{ServiceS3}},
		{Dir: dir},
	} {
		if st, err := Start(ctx, c); err == nil {
			st.Stop()
			t.Errorf("%d: Start(%v) over a directory whose services run succeeded", i, c.Services)
		} else if !strings.Contains(err.Error(), "run by another devstack") {
			t.Errorf("%d: Start(%v): %v, want the lock's refusal", i, c.Services, err)
		}
	}
}
