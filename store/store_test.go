package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/ptopofl/ptopofl/artifact"
)

func TestPutGet(t *testing.T) {
	ctx := context.Background()
	d := testDescriptor()
	d.Campaign = "putget"
	ref, err := testStore.PutDescriptor(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Key != artifact.DescriptorKey("putget", 3, "site-a") || ref.Bucket != testStore.Bucket() || len(ref.SHA256) != 64 || ref.Size <= 0 {
		t.Errorf("ref = %+v", ref)
	}
	got, err := testStore.GetDescriptor(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(got.Descriptor, d.Descriptor) || got.Site != d.Site {
		t.Errorf("got %+v", got)
	}

	// Identical bytes again: the same ref, no error.
	again, err := testStore.PutDescriptor(ctx, d)
	if err != nil || again != ref {
		t.Errorf("second put: ref %+v err %v, want %+v nil", again, err, ref)
	}

	keys, err := testStore.List(ctx, artifact.RoundPrefix("putget", 3))
	if err != nil || len(keys) != 1 || keys[0] != ref.Key {
		t.Errorf("List = %v, %v", keys, err)
	}
	if ok, err := testStore.Exists(ctx, ref.Key); !ok || err != nil {
		t.Errorf("Exists = %v, %v", ok, err)
	}
	if ok, err := testStore.Exists(ctx, "campaigns/none/spec.json"); ok || err != nil {
		t.Errorf("Exists(missing) = %v, %v", ok, err)
	}
}

func TestGetDetectsChangedContent(t *testing.T) {
	ctx := context.Background()
	key := artifact.ModelKey("tamper", 1, "s1")
	ref, err := testStore.PutModel(ctx, ModelRecord{Campaign: "tamper", Round: 1, Site: "s1", Kind: KindModel, Params: []float64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Key != key {
		t.Fatalf("key %s, want %s", ref.Key, key)
	}
	// Overwrite the object behind the ref's back.
	if _, err := testStore.PutModel(ctx, ModelRecord{Campaign: "tamper", Round: 1, Site: "s1", Kind: KindModel, Params: []float64{1, 2, 4}}); err != nil {
		t.Fatal(err)
	}
	_, err = testStore.GetModel(ctx, ref)
	if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), key) {
		t.Errorf("GetModel after tampering: err = %v, want ErrIntegrity naming %s", err, key)
	}
	// A ref with the right bytes but a wrong size is caught too.
	_, b, _ := testStore.GetKey(ctx, key)
	bad := testStore.Ref(key, b)
	bad.Size++
	if _, err := testStore.Get(ctx, bad); !errors.Is(err, ErrIntegrity) {
		t.Errorf("Get with wrong size: err = %v", err)
	}
	if _, err := testStore.Get(ctx, artifact.Ref{Bucket: testStore.Bucket(), Key: "campaigns/tamper/nothing"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get missing key: err = %v, want ErrNotFound", err)
	}
}

type testManifest struct {
	Campaign     string             `json:"campaign"`
	Round        int                `json:"round"`
	Participants []string           `json:"participants"`
	Trust        map[string]float64 `json:"trust"`
	Previous     string             `json:"previous_sha256"`
}

func TestPutIfAbsentOrSame(t *testing.T) {
	ctx := context.Background()
	key := artifact.ManifestKey("commit", 0)
	m := testManifest{Campaign: "commit", Participants: []string{"a", "b"}, Trust: map[string]float64{"b": 0.25, "a": 0.75}}
	ref, err := testStore.PutJSONIfAbsentOrSame(ctx, key, m)
	if err != nil {
		t.Fatal(err)
	}
	// A retried commit with the same content succeeds with the same ref.
	again, err := testStore.PutJSONIfAbsentOrSame(ctx, key, m)
	if err != nil || again != ref {
		t.Errorf("retry: %+v %v, want %+v nil", again, err, ref)
	}
	// Different content is refused and the committed object is untouched.
	m2 := m
	m2.Participants = []string{"a"}
	if _, err := testStore.PutJSONIfAbsentOrSame(ctx, key, m2); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), key) {
		t.Errorf("conflicting commit: err = %v, want ErrConflict naming the key", err)
	}
	var got testManifest
	if err := testStore.GetJSON(ctx, ref, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Participants) != 2 || got.Trust["a"] != 0.75 {
		t.Errorf("committed manifest changed: %+v", got)
	}
	var byKey testManifest
	if r, err := testStore.GetJSONKey(ctx, key, &byKey); err != nil || r != ref {
		t.Errorf("GetJSONKey: %+v %v", r, err)
	}
	// Unknown fields are an error, not silently dropped.
	var narrow struct{ Campaign string }
	if err := testStore.GetJSON(ctx, ref, &narrow); err == nil {
		t.Error("GetJSON into a narrower struct: nil error")
	}
}

func TestCanonicalJSON(t *testing.T) {
	a, _ := MarshalJSON(map[string]int{"b": 1, "a": 2})
	b, _ := MarshalJSON(map[string]int{"a": 2, "b": 1})
	if string(a) != string(b) || !strings.HasSuffix(string(a), "}\n") {
		t.Errorf("MarshalJSON not canonical: %q vs %q", a, b)
	}
}

func TestConfigErrors(t *testing.T) {
	for i, cfg := range []Config{
		{Endpoint: "127.0.0.1:1", AccessKey: "a", SecretKey: "b"},                          // no bucket
		{Endpoint: "127.0.0.1:1", Bucket: "b"},                                             // no credentials
		{Endpoint: "ftp://127.0.0.1:1", Bucket: "b", AccessKey: "a", SecretKey: "b"},       // scheme
		{Endpoint: "http://127.0.0.1:1/path", Bucket: "b", AccessKey: "a", SecretKey: "b"}, // path
		{Bucket: "b", AccessKey: "a", SecretKey: "b"},                                      // no endpoint
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%d: New(%+v) = nil error", i, cfg)
		}
	}
	t.Setenv(EnvAccessKey, "")
	t.Setenv(EnvSecretKey, "x")
	if _, _, err := CredentialsFromEnv(); err == nil || !strings.Contains(err.Error(), EnvAccessKey) {
		t.Errorf("CredentialsFromEnv: %v", err)
	}
}

// TestServerHonoursIfNoneMatch checks the premise of PutIfAbsentOrSame's
// atomicity: the server refuses a conditional PUT over an existing object.
func TestServerHonoursIfNoneMatch(t *testing.T) {
	ctx := context.Background()
	ref := testStore.Ref("campaigns/cond/x.json", []byte("{}"))
	if err := testStore.put(ctx, ref, []byte("{}"), true); err != nil {
		t.Fatal(err)
	}
	err := testStore.put(ctx, ref, []byte("{}"), true)
	if code := minio.ToErrorResponse(errors.Unwrap(err)).Code; code != "PreconditionFailed" {
		t.Errorf("second conditional put: err %v (code %q), want PreconditionFailed", err, code)
	}
}

// TestConcurrentConditionalPutsOneWins: eight writers race conditional
// PUTs of different bodies to one key; exactly one succeeds and the object
// holds its body (the embedded server makes conditional puts atomic with
// an in-process lock, not a lock file).
func TestConcurrentConditionalPutsOneWins(t *testing.T) {
	ctx := context.Background()
	const writers = 8
	key := "campaigns/cond/race.json"
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			body := []byte(fmt.Sprintf(`{"writer":%d}`, i))
			errs[i] = testStore.put(ctx, testStore.Ref(key, body), body, true)
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both succeeded", winner, i)
			}
			winner = i
		} else if code := minio.ToErrorResponse(errors.Unwrap(err)).Code; code != "PreconditionFailed" {
			t.Errorf("writer %d: %v, want PreconditionFailed", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	body := []byte(fmt.Sprintf(`{"writer":%d}`, winner))
	got, err := testStore.Get(ctx, testStore.Ref(key, body))
	if err != nil || string(got) != string(body) {
		t.Errorf("object holds %q (err %v), want the winner's %q", got, err, body)
	}
}

func BenchmarkPutGetModel(b *testing.B) {
	ctx := context.Background()
	m := ModelRecord{Campaign: "bench", Site: "s", Kind: KindModel, Params: make([]float64, 64)}
	for b.Loop() {
		ref, err := testStore.PutModel(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := testStore.GetModel(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeleteIsIdempotent: ListSizes reports each object with the size Put
// returned; Delete removes an object, and deleting it again, or a key that
// never held anything, succeeds (the retention step may run twice).
func TestDeleteIsIdempotent(t *testing.T) {
	ctx := context.Background()
	prefix := artifact.RoundPrefix("delete", 1)
	a, err := testStore.Put(ctx, prefix+"models/a.parquet", []byte("model a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := testStore.Put(ctx, prefix+"models/b.parquet", []byte("model bb"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testStore.ListSizes(ctx, prefix)
	want := []Object{{a.Key, 7}, {b.Key, 8}} // len("model a"), len("model bb")
	if err != nil || fmt.Sprint(objs) != fmt.Sprint(want) {
		t.Fatalf("ListSizes = %v, %v; want %v", objs, err, want)
	}
	for i := 0; i < 2; i++ {
		if err := testStore.Delete(ctx, a.Key); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
	if err := testStore.Delete(ctx, prefix+"models/never.parquet"); err != nil {
		t.Errorf("delete of a missing key: %v", err)
	}
	keys, err := testStore.List(ctx, prefix)
	if err != nil || len(keys) != 1 || keys[0] != b.Key {
		t.Errorf("after delete: List = %v, %v; want [%s]", keys, err, b.Key)
	}
	if _, _, err := testStore.GetKey(ctx, a.Key); !errors.Is(err, ErrNotFound) {
		t.Errorf("get after delete: %v, want ErrNotFound", err)
	}
}
