package payloadcodec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// keyLine is a key file line with a fixed, recognisable key: 32 bytes of b.
func keyLine(id string, b byte) string {
	return id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, KeySize))
}

func mustKeys(t *testing.T, lines ...string) *Keys {
	t.Helper()
	k, err := ParseKeys(strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func payload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRoundTrip seals a payload and opens it again, and checks what the
// sealed form shows: the encoding and the key ID, nothing of the value.
func TestRoundTrip(t *testing.T) {
	c := NewCodec(mustKeys(t, keyLine("k2", 2), keyLine("k1", 1)))
	in := payload(t, map[string]string{"key": "campaigns/c/round-0001/models/hospital-a.parquet"})
	enc, err := c.Encode([]*commonpb.Payload{in})
	if err != nil {
		t.Fatal(err)
	}
	got := enc[0]
	if e := string(got.Metadata[converter.MetadataEncoding]); e != EncodingEncrypted {
		t.Errorf("encoding %q, want %q", e, EncodingEncrypted)
	}
	if id := string(got.Metadata[MetadataKeyID]); id != "k2" {
		t.Errorf("key id %q, want the current key k2 (the first line)", id)
	}
	if bytes.Contains(got.Data, []byte("hospital-a")) || bytes.Contains(got.Data, []byte("json/plain")) {
		t.Error("sealed payload shows plaintext")
	}
	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(dec[0], in) {
		t.Errorf("round trip changed the payload: %v, want %v", dec[0], in)
	}
}

// TestFreshNonce seals the same payload twice: the ciphertexts differ (and
// so do their first 12 bytes, the nonce).
func TestFreshNonce(t *testing.T) {
	c := NewCodec(mustKeys(t, keyLine("k1", 1)))
	in := payload(t, "same value")
	a, err := c.Encode([]*commonpb.Payload{in})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode([]*commonpb.Payload{in})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a[0].Data[:nonceSize], b[0].Data[:nonceSize]) || bytes.Equal(a[0].Data, b[0].Data) {
		t.Error("two seals of the same payload share a nonce")
	}
}

// TestDecode covers rotation and every way opening can fail; each error
// must name the key ID and never contain key material.
func TestDecode(t *testing.T) {
	old := NewCodec(mustKeys(t, keyLine("2026-01", 1)))
	in := payload(t, 0.8731)
	sealed, err := old.Encode([]*commonpb.Payload{in})
	if err != nil {
		t.Fatal(err)
	}
	relabelled := proto.Clone(sealed[0]).(*commonpb.Payload)
	relabelled.Metadata[MetadataKeyID] = []byte("2026-02")
	truncated := proto.Clone(sealed[0]).(*commonpb.Payload)
	truncated.Data = truncated.Data[:5]

	cases := []struct {
		keys    *Keys
		in      *commonpb.Payload
		wantErr string // "" means it opens to in
	}{
		0: {mustKeys(t, keyLine("2026-02", 2), keyLine("2026-01", 1)), sealed[0], ""},                                     // rotated: old key still opens
		1: {mustKeys(t, keyLine("2026-02", 2)), sealed[0], `key id "2026-01", which is not among`},                        // old key dropped
		2: {nil, sealed[0], `key id "2026-01", but no payload keys are configured`},                                       // no keys at all
		3: {mustKeys(t, keyLine("2026-01", 9)), sealed[0], `payload key "2026-01" does not open`},                         // same id, other material
		4: {mustKeys(t, keyLine("2026-02", 1), keyLine("2026-01", 1)), relabelled, `payload key "2026-02" does not open`}, // metadata edited
		5: {mustKeys(t, keyLine("2026-01", 1)), truncated, `key id "2026-01" is truncated`},
		6: {nil, in, ""}, // plaintext (histories from before encryption) passes through
	}
	for i, tc := range cases {
		out, err := NewCodec(tc.keys).Decode([]*commonpb.Payload{tc.in})
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%d: %v", i, err)
			} else if !proto.Equal(out[0], in) {
				t.Errorf("%d: got %v, want %v", i, out[0], in)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%d: error %v, want one containing %q", i, err, tc.wantErr)
			continue
		}
		for _, b := range []byte{1, 2, 9} {
			if strings.Contains(err.Error(), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, KeySize))) {
				t.Errorf("%d: error shows key material: %v", i, err)
			}
		}
	}
}

// TestParseKeys checks the key file format's errors; none may quote the
// key material.
func TestParseKeys(t *testing.T) {
	good := keyLine("a", 7)
	material := strings.TrimPrefix(good, "a:")
	cases := []struct {
		text    string
		wantErr string
	}{
		0: {"# comment\n\n" + good + "\n" + keyLine("b", 8) + "\n", ""},
		1: {"", "no key"},
		2: {material, "line 1: want ID:BASE64"},
		3: {good + "\n" + keyLine("a", 8), `line 2: key id "a" given twice`},
		4: {"a:" + base64.StdEncoding.EncodeToString(make([]byte, 16)), `key "a" has 16 bytes, want 32`},
		5: {"a:" + material + "!", `key "a" is not standard base64`},
		6: {"bad id:" + material, `key id "bad id"`},
	}
	for i, tc := range cases {
		k, err := ParseKeys(tc.text)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%d: %v", i, err)
			} else if k.Current() != "a" || strings.Join(k.IDs(), ",") != "a,b" {
				t.Errorf("%d: current %s ids %v, want a and [a b]", i, k.Current(), k.IDs())
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%d: error %v, want one containing %q", i, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), material) {
			t.Errorf("%d: error shows key material: %v", i, err)
		}
	}
}

// TestKeysDoNotPrint formats Keys every way fmt can: only IDs show.
func TestKeysDoNotPrint(t *testing.T) {
	k := mustKeys(t, keyLine("k1", 5))
	material := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, KeySize))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		s := fmt.Sprintf(verb, k)
		if strings.Contains(s, material) || strings.Contains(s, string(bytes.Repeat([]byte{5}, 8))) || !strings.Contains(s, "k1") {
			t.Errorf("%s prints %q", verb, s)
		}
	}
}

// TestLoadKeys reads keys from a file, the file named in the environment,
// and the environment itself, in that order of preference, and refuses a
// key file others can read.
func TestLoadKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	if err := os.WriteFile(path, []byte(keyLine("file", 1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvKeyFile, "")
	t.Setenv(EnvKeys, keyLine("env1", 2)+","+keyLine("env0", 3))
	cases := []struct {
		path, envFile string
		wantCurrent   string
	}{
		0: {path, "", "file"},
		1: {"", path, "file"},
		2: {"", "", "env1"},
	}
	for i, tc := range cases {
		t.Setenv(EnvKeyFile, tc.envFile)
		k, err := LoadKeys(tc.path)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if k.Current() != tc.wantCurrent {
			t.Errorf("%d: current %s, want %s", i, k.Current(), tc.wantCurrent)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key file: error %v, want one asking for chmod 600", err)
	}
	t.Setenv(EnvKeys, "")
	t.Setenv(EnvKeyFile, "")
	if k, err := LoadKeys(""); k != nil || err != nil {
		t.Errorf("nothing configured: %v %v, want nil nil", k, err)
	}
}

// TestNewKeyLine generates a key that ParseKeys accepts, different each time.
func TestNewKeyLine(t *testing.T) {
	a, err := NewKeyLine("local-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKeyLine("local-1")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Error("two generated keys are equal")
	}
	if k := mustKeys(t, a); k.Current() != "local-1" {
		t.Errorf("current %s, want local-1", k.Current())
	}
}

// BenchmarkSealOpen seals and opens one payload of the size of a typical
// activity input (a few references and settings, ~2 KiB).
func BenchmarkSealOpen(b *testing.B) {
	k, err := ParseKeys(keyLine("k1", 1))
	if err != nil {
		b.Fatal(err)
	}
	c := NewCodec(k)
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: bytes.Repeat([]byte("x"), 2048)}
	b.SetBytes(int64(len(p.Data)))
	for b.Loop() {
		enc, err := c.Encode([]*commonpb.Payload{p})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
