// Package payloadcodec encrypts Temporal payloads end to end: every
// workflow and activity input and output, heartbeat detail, memo and (with
// FailureConverter) every error message and stack trace is sealed with
// AES-256-GCM before it leaves the process, so the Temporal server and its
// database hold only ciphertext. The starter, the server worker and the site
// workers share the keys; the Temporal server never sees them.
//
// A sealed payload carries the ID of the key that sealed it in its metadata
// (MetadataKeyID), so keys can rotate: a process seals with its current key
// and opens with any key it knows. Keys come only from a file or the
// environment (LoadKeys), never from a flag's value, and nothing here prints
// key material.
//
// What it does not hide: workflow IDs, task queue names, activity and
// workflow type names, timestamps, attempt counts and search attributes are
// not payloads; the Temporal server needs them in the clear.
package payloadcodec

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Metadata of a sealed payload.
const (
	// EncodingEncrypted is the "encoding" metadata value of a sealed payload.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key that sealed the payload.
	MetadataKeyID = "encryption-key-id"
)

// Environment variables LoadKeys reads.
const (
	// EnvKeyFile names a key file (see ParseKeys for its format).
	EnvKeyFile = "PTOPOFL_PAYLOAD_KEY_FILE"
	// EnvKeys holds the keys themselves, in the key file's format, with
	// commas allowed in place of newlines.
	EnvKeys = "PTOPOFL_PAYLOAD_KEYS"
)

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// nonceSize is GCM's standard nonce length; a fresh random nonce per payload
// keeps the probability of a repeat negligible for far more than 2^32
// payloads per key.
const nonceSize = 12

// aadPrefix binds the ciphertext to its key ID: a payload whose
// metadata was edited to name another key fails to open instead of being
// read under the wrong name.
const aadPrefix = "ptopofl-payload-v1/"

// Keys is a set of payload keys, one of them current. It holds the key
// material only inside AEAD ciphers and prints as its key IDs.
type Keys struct {
	current string
	ids     []string // in file order; ids[0] == current
	aeads   map[string]cipher.AEAD
}

// ParseKeys reads keys in the key file format: one key per line as
// "ID:BASE64", where BASE64 is the standard encoding of 32 random bytes and
// ID is 1 to 64 characters of [A-Za-z0-9._-]. Blank lines and lines starting
// with '#' are ignored. The first key is the current one (used to seal);
// the others only open payloads sealed before a rotation. Errors name the
// line and the key ID, never the key material.
func ParseKeys(text string) (*Keys, error) {
	k := &Keys{aeads: map[string]cipher.AEAD{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, b64, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("payload keys, line %d: want ID:BASE64", n)
		}
		id = strings.TrimSpace(id)
		if err := checkKeyID(id); err != nil {
			return nil, fmt.Errorf("payload keys, line %d: %w", n, err)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("payload keys, line %d: key id %q given twice", n, id)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			return nil, fmt.Errorf("payload keys, line %d: key %q is not standard base64", n, id)
		}
		if len(raw) != KeySize {
			return nil, fmt.Errorf("payload keys, line %d: key %q has %d bytes, want %d (AES-256)", n, id, len(raw), KeySize)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("payload keys, line %d: key %q: %w", n, id, err)
		}
		aead, err := cipher.NewGCMWithNonceSize(block, nonceSize)
		if err != nil {
			return nil, fmt.Errorf("payload keys, line %d: key %q: %w", n, id, err)
		}
		k.aeads[id] = aead
		k.ids = append(k.ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("payload keys: %w", err)
	}
	if len(k.ids) == 0 {
		return nil, errors.New("payload keys: no key (want lines ID:BASE64)")
	}
	k.current = k.ids[0]
	return k, nil
}

func checkKeyID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("key id %q: want 1 to 64 characters", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("key id %q: only A-Z, a-z, 0-9, '.', '_' and '-' are allowed", id)
		}
	}
	return nil
}

// LoadKeyFile reads the keys of a key file (ParseKeys' format). It refuses a
// file that users other than its owner can read or write: the keys open
// every campaign's history.
func LoadKeyFile(path string) (*Keys, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("payload key file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("payload key file %s has mode %04o; make it readable by its owner only (chmod 600)", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("payload key file: %w", err)
	}
	k, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// LoadKeys returns the keys of the file at path when path is not empty,
// else those of the file named by EnvKeyFile, else those in EnvKeys, else
// nil: no keys, so payloads travel in the clear and a sealed payload cannot
// be opened (the codec says which key it needs).
func LoadKeys(path string) (*Keys, error) {
	if path == "" {
		path = os.Getenv(EnvKeyFile)
	}
	if path != "" {
		return LoadKeyFile(path)
	}
	if v := os.Getenv(EnvKeys); v != "" {
		k, err := ParseKeys(strings.ReplaceAll(v, ",", "\n"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeys, err)
		}
		return k, nil
	}
	return nil, nil
}

// NewKeyLine returns a fresh key as a key file line "ID:BASE64" (no
// newline), from crypto/rand.
func NewKeyLine(id string) (string, error) {
	if err := checkKeyID(id); err != nil {
		return "", err
	}
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("new payload key: %w", err)
	}
	return id + ":" + base64.StdEncoding.EncodeToString(raw), nil
}

// Current is the ID of the key that seals new payloads.
func (k *Keys) Current() string { return k.current }

// IDs are the IDs of every key, the current one first.
func (k *Keys) IDs() []string { return slices.Clone(k.ids) }

// String lists the key IDs; it never shows key material.
func (k *Keys) String() string {
	if k == nil {
		return "no payload keys"
	}
	return fmt.Sprintf("payload keys %s (current %s)", strings.Join(k.ids, ", "), k.current)
}

// GoString is String, so that %#v does not print the ciphers either.
func (k *Keys) GoString() string { return k.String() }

// Codec seals and opens payloads with a set of keys; see the package doc.
type Codec struct {
	keys *Keys // nil: seal nothing, open nothing
}

// NewCodec returns a codec over keys. With nil keys it passes payloads
// through unchanged and fails on a sealed one, naming the key it would need.
func NewCodec(keys *Keys) *Codec { return &Codec{keys: keys} }

// Encode seals every payload with the current key, under a fresh random
// nonce; with no keys it returns them unchanged.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if c.keys == nil {
		return payloads, nil
	}
	id := c.keys.current
	aead := c.keys.aeads[id]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("seal payload: %w", err)
		}
		nonce := make([]byte, nonceSize, nonceSize+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("seal payload: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:              []byte(id),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(aadPrefix+id)),
		}
	}
	return out, nil
}

// Decode opens every sealed payload with the key its metadata names and
// returns the others unchanged (histories written before encryption was
// turned on stay readable). A key it does not know, or one that does not
// open the payload, is an error naming the key ID.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		if c.keys == nil {
			return nil, fmt.Errorf("payload is encrypted with key id %q, but no payload keys are configured: give the key file with --payload-key-file or %s (or the keys in %s)", id, EnvKeyFile, EnvKeys)
		}
		aead, ok := c.keys.aeads[id]
		if !ok {
			return nil, fmt.Errorf("payload is encrypted with key id %q, which is not among the configured payload keys (%s): add that key to the key file", id, strings.Join(c.keys.ids, ", "))
		}
		data := p.GetData()
		if len(data) < nonceSize+aead.Overhead() {
			return nil, fmt.Errorf("payload encrypted with key id %q is truncated (%d bytes)", id, len(data))
		}
		plain, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], []byte(aadPrefix+id))
		if err != nil {
			return nil, fmt.Errorf("payload key %q does not open this payload: the key file holds different key material under that id, or the payload was altered", id)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("payload encrypted with key id %q: decode: %w", id, err)
		}
		out[i] = &dec
	}
	return out, nil
}

// DataConverter is the SDK's default data converter with the codec over
// keys applied to every payload.
func DataConverter(keys *Keys) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), NewCodec(keys))
}

// FailureConverter turns errors into Temporal failures whose message and
// stack trace go through dc (EncodeCommonAttributes), so error text, which
// can name artifact keys and sites, is sealed too.
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}
