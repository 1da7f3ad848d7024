package store

import (
	"bytes"
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestExportRoundTrip: export rows, nulls included, decode to what was
// encoded, and the same rows always give the same bytes.
func TestExportRoundTrip(t *testing.T) {
	rows := []ExportRow{
		{ // 0 a participant with every value
			Campaign: "c1", Method: "ptopofl", Round: 1, Site: "site0", Participated: true,
			Cluster: ptr(1), Trust: ptr(0.75), Flagged: true, Drift: ptr(0.0),
			AUC: ptr(0.9), Acc: ptr(0.8), NumTrain: ptr(140), NumTest: ptr(34),
			ModelSHA256: ptr("aa"), DescriptorSHA256: ptr("bb"), SiteModelSHA256: ptr("cc"), ManifestSHA256: "dd",
		},
		{ // 1 dropped in training: no metrics, no model
			Campaign: "c1", Method: "ptopofl", Round: 1, Site: "site1",
			DropPhase: ptr("train"), DropReason: ptr("timeout"), Cluster: ptr(0), Trust: ptr(1.0), Drift: ptr(0.0),
			DescriptorSHA256: ptr("ee"), ManifestSHA256: "dd",
		},
		{Campaign: "c1", Method: "fedavg", Round: 2, Site: "site2", Participated: true, ManifestSHA256: "ff"}, // 2 nothing known
	}
	b, err := EncodeExport(rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeExport(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", got, rows)
	}
	again, _ := EncodeExport(rows)
	if !bytes.Equal(b, again) {
		t.Errorf("EncodeExport is not deterministic")
	}
	if _, err := DecodeMetrics(b); err == nil {
		t.Errorf("an export file decoded as metrics")
	}
	if _, err := EncodeExport([]ExportRow{{Round: -1}}); err == nil {
		t.Errorf("negative round accepted")
	}
}
