package secagg

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"

	"github.com/cloudflare/circl/group"
	"github.com/cloudflare/circl/secretsharing"
)

// field is the prime-order group over whose scalar field secrets are
// Shamir-shared. P-256's scalars are drawn from the reader they are given
// (Ristretto255's in circl ignore it), which makes every share a function
// of the member's seed: a retried stage sends the same bytes.
var field = group.P256

// scalarSize is the length of a marshalled scalar of field.
const scalarSize = 32

// PublicKeys is what a member advertises in the first stage.
type PublicKeys struct {
	// Enc is the X25519 public key that neighbours encrypt shares to.
	Enc []byte `json:"enc"`
	// Mask is the X25519 public key whose agreement with a neighbour's
	// keys their pairwise mask.
	Mask []byte `json:"mask"`
	// SelfCommit is SHA-256 of the self-mask secret (bound to the Context
	// and the member): the server checks a reconstructed secret against it,
	// so a wrong share cannot unmask to a wrong sum unnoticed.
	SelfCommit []byte `json:"self_commit"`
}

// Member is one member's side of a run. It holds secrets derived from its
// seed: keep it on the member's premises. It is not safe for concurrent
// use.
type Member struct {
	g    *Group
	name string
	idx  int
	seed [32]byte
	enc  *ecdh.PrivateKey
	mask *ecdh.PrivateKey
	// selfSecret seeds the self mask; maskSecret derives mask. Both are
	// Shamir-shared among the neighbours, with the polynomials polySelf and
	// polyMask (drawn on first use).
	selfSecret, maskSecret group.Scalar
	polySelf, polyMask     *secretsharing.SecretSharing
}

// Member returns name's side of the run, all of whose secrets derive from
// seed, a 32-byte secret of the member's for this Context (the site's
// keyed stream): the same seed gives the same keys, shares and masks.
func (g *Group) Member(name string, seed [32]byte) (*Member, error) {
	i, ok := g.index[name]
	if !ok {
		return nil, fmt.Errorf("secagg: %q is not a member of group %q", name, g.ctx.Group)
	}
	m := &Member{g: g, name: name, idx: i, seed: seed}
	var err error
	if m.enc, err = ecdh.X25519().NewPrivateKey(m.derive("encryption key")); err != nil {
		return nil, fmt.Errorf("secagg: %w", err)
	}
	m.selfSecret = field.RandomScalar(drbg(m.derive("self-mask secret")))
	m.maskSecret = field.RandomScalar(drbg(m.derive("mask secret")))
	if m.mask, err = maskKey(g, name, m.maskSecret); err != nil {
		return nil, err
	}
	return m, nil
}

// derive expands the member's seed into 32 bytes for purpose (HKDF-SHA256,
// RFC 5869, with the Context and the member's name in its info).
func (m *Member) derive(purpose string) []byte {
	return kdf(m.seed[:], purpose, m.g.cb, []byte(m.name))
}

// kdf is 32 bytes of HKDF-SHA256 (RFC 5869) of secret, with info the
// purpose, a zero byte, and each part prefixed by its 32-bit length.
func kdf(secret []byte, purpose string, parts ...[]byte) []byte {
	info := append([]byte(purpose), 0)
	for _, p := range parts {
		info = append(info, byte(len(p)>>24), byte(len(p)>>16), byte(len(p)>>8), byte(len(p)))
		info = append(info, p...)
	}
	out, err := hkdf.Key(sha256.New, secret, nil, string(info), 32)
	if err != nil {
		panic("secagg: hkdf: " + err.Error()) // only for lengths beyond 255·32
	}
	return out
}

// drbg is a deterministic, cryptographically strong byte stream keyed by
// key (ChaCha8, math/rand/v2).
func drbg(key []byte) *rand.ChaCha8 {
	var s [32]byte
	copy(s[:], key)
	return rand.NewChaCha8(s)
}

// maskKey is the X25519 key a member's mask secret derives: the server
// derives it again from the reconstructed secret of a dropped member.
func maskKey(g *Group, name string, secret group.Scalar) (*ecdh.PrivateKey, error) {
	b, err := secret.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("secagg: %w", err)
	}
	k, err := ecdh.X25519().NewPrivateKey(kdf(b, "mask key", g.cb, []byte(name)))
	if err != nil {
		return nil, fmt.Errorf("secagg: %w", err)
	}
	return k, nil
}

// selfCommit is the commitment to a self-mask secret.
func selfCommit(g *Group, name string, secret group.Scalar) []byte {
	b, _ := secret.MarshalBinary()
	return kdf(b, "self-mask commitment", g.cb, []byte(name))
}

// Name returns the member's name.
func (m *Member) Name() string { return m.name }

// PublicKeys is the first stage: what the member advertises.
func (m *Member) PublicKeys() PublicKeys {
	return PublicKeys{
		Enc:        m.enc.PublicKey().Bytes(),
		Mask:       m.mask.PublicKey().Bytes(),
		SelfCommit: selfCommit(m.g, m.name, m.selfSecret),
	}
}

// shares returns the member's shares of its two secrets for the share
// holder at index holder: the polynomials are drawn from the seed, so a
// holder's shares are the same whichever other holders are asked for.
func (m *Member) shares(holder int) (self, mask group.Scalar) {
	if m.polySelf == nil {
		rnd := drbg(m.derive("share polynomials"))
		t := uint(m.g.cfg.Threshold - 1) // circl's t is the polynomial's degree
		ps := secretsharing.New(rnd, t, m.selfSecret)
		pm := secretsharing.New(rnd, t, m.maskSecret)
		m.polySelf, m.polyMask = &ps, &pm
	}
	id := field.NewScalar().SetUint64(uint64(holder + 1))
	return m.polySelf.ShareWithID(id).Value, m.polyMask.ShareWithID(id).Value
}

// checkPublic checks that pub holds well-formed keys for every name it
// lists, all members.
func (g *Group) checkPublic(pub map[string]PublicKeys) error {
	for name, k := range pub {
		if !g.Has(name) {
			return fmt.Errorf("secagg: group %q: public keys of %q, not a member", g.ctx.Group, name)
		}
		if _, err := ecdh.X25519().NewPublicKey(k.Enc); err != nil {
			return fmt.Errorf("secagg: group %q: %s's encryption key: %w", g.ctx.Group, name, err)
		}
		if _, err := ecdh.X25519().NewPublicKey(k.Mask); err != nil {
			return fmt.Errorf("secagg: group %q: %s's mask key: %w", g.ctx.Group, name, err)
		}
		if len(k.SelfCommit) != 32 {
			return fmt.Errorf("secagg: group %q: %s's self-mask commitment has %d bytes, want 32", g.ctx.Group, name, len(k.SelfCommit))
		}
	}
	return nil
}

// channel returns the AEAD that carries shares from one member to another:
// AES-256-GCM under HKDF of their X25519 agreement, with the direction in
// the derivation so that each key encrypts one message; the nonce is then
// zero and the additional data binds the Context and both names.
func channel(g *Group, own *ecdh.PrivateKey, peer []byte, from, to string) (cipher.AEAD, []byte, error) {
	pk, err := ecdh.X25519().NewPublicKey(peer)
	if err != nil {
		return nil, nil, fmt.Errorf("secagg: %s's encryption key: %w", to, err)
	}
	z, err := own.ECDH(pk)
	if err != nil {
		return nil, nil, fmt.Errorf("secagg: agreement between %s and %s: %w", from, to, err)
	}
	ad := kdf(nil, "share channel ad", g.cb, []byte(from), []byte(to))
	block, err := aes.NewCipher(kdf(z, "share channel", g.cb, []byte(from), []byte(to)))
	if err != nil {
		return nil, nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, err
	}
	return aead, ad, nil
}

// ShareKeys is the second stage. pub holds the public keys of the members
// that advertised them; the member encrypts to each of its neighbours
// among them (itself aside) that neighbour's shares of its two secrets,
// and returns the ciphertexts by recipient. It fails with ErrTooFew when
// fewer than t of its share holders (itself included) advertised keys:
// its secrets could not be reconstructed.
func (m *Member) ShareKeys(pub map[string]PublicKeys) (map[string][]byte, error) {
	if err := m.g.checkPublic(pub); err != nil {
		return nil, err
	}
	if _, ok := pub[m.name]; !ok {
		return nil, fmt.Errorf("secagg: group %q: the public keys do not include %s's own", m.g.ctx.Group, m.name)
	}
	out := map[string][]byte{}
	holders := 0
	for _, v := range m.g.Neighbours(m.name) {
		k, ok := pub[v]
		if !ok {
			continue
		}
		holders++
		if v == m.name {
			continue
		}
		self, mask := m.shares(m.g.index[v])
		plain := make([]byte, 0, 2*scalarSize)
		for _, s := range []group.Scalar{self, mask} {
			b, err := s.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("secagg: %w", err)
			}
			plain = append(plain, b...)
		}
		aead, ad, err := channel(m.g, m.enc, k.Enc, m.name, v)
		if err != nil {
			return nil, err
		}
		out[v] = aead.Seal(nil, make([]byte, aead.NonceSize()), plain, ad)
	}
	if holders < m.g.cfg.Threshold {
		return nil, fmt.Errorf("%w: group %q: %d of %s's %d share holders advertised keys, fewer than the threshold %d", ErrTooFew, m.g.ctx.Group, holders, m.name, m.g.cfg.Shares, m.g.cfg.Threshold)
	}
	return out, nil
}

// MaskInput is the third stage: x quantised (Quantize, with the member's
// own rounding stream), plus the self mask, plus for each neighbour v in
// shared (the members whose shares were delivered, v ≠ the member) the
// pairwise mask, added when the member's index is below v's and subtracted
// otherwise, all modulo 2³². It returns the masked vector and how many
// coordinates were clipped. The member must itself be in shared.
func (m *Member) MaskInput(x []float64, pub map[string]PublicKeys, shared []string) ([]uint32, int, error) {
	if err := m.g.checkPublic(pub); err != nil {
		return nil, 0, err
	}
	if err := m.g.checkNames("the members that shared keys", shared); err != nil {
		return nil, 0, err
	}
	in := setOf(shared)
	if !in[m.name] {
		return nil, 0, fmt.Errorf("secagg: group %q: %s is not among the members that shared keys", m.g.ctx.Group, m.name)
	}
	y, clipped, err := Quantize(x, m.g.cfg.Clip, m.g.cfg.QuantBits, drbg(m.derive("rounding")))
	if err != nil {
		return nil, 0, err
	}
	selfKey, err := m.selfMaskKey()
	if err != nil {
		return nil, 0, err
	}
	addMask(y, selfKey, +1)
	for _, v := range m.g.Neighbours(m.name) {
		if v == m.name || !in[v] {
			continue
		}
		k, ok := pub[v]
		if !ok {
			return nil, 0, fmt.Errorf("secagg: group %q: %s shared keys but its public keys are missing", m.g.ctx.Group, v)
		}
		key, err := pairKey(m.g, m.mask, k.Mask, m.name, v)
		if err != nil {
			return nil, 0, err
		}
		addMask(y, key, pairSign(m.idx, m.g.index[v]))
	}
	return y, clipped, nil
}

func (m *Member) selfMaskKey() ([]byte, error) {
	b, err := m.selfSecret.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("secagg: %w", err)
	}
	return selfMaskKey(m.g, m.name, b), nil
}

func selfMaskKey(g *Group, name string, secret []byte) []byte {
	return kdf(secret, "self mask", g.cb, []byte(name))
}

// pairKey is the key of the mask between members a and b: HKDF of their
// X25519 agreement with both names in sorted order, so either side (or the
// server, with a dropped member's reconstructed key) derives it alike.
func pairKey(g *Group, own *ecdh.PrivateKey, peer []byte, a, b string) ([]byte, error) {
	pk, err := ecdh.X25519().NewPublicKey(peer)
	if err != nil {
		return nil, fmt.Errorf("secagg: %s's mask key: %w", b, err)
	}
	z, err := own.ECDH(pk)
	if err != nil {
		return nil, fmt.Errorf("secagg: mask agreement between %s and %s: %w", a, b, err)
	}
	if a > b {
		a, b = b, a
	}
	return kdf(z, "pairwise mask", g.cb, []byte(a), []byte(b)), nil
}

// pairSign is the sign with which member i adds its mask with member j:
// +1 for the lower index, −1 for the higher, so each pair cancels.
func pairSign(i, j int) int {
	if i < j {
		return +1
	}
	return -1
}

// addMask adds sign times the mask stream of key to y, modulo 2³²: the
// stream is AES-256-CTR of zeros under key, read as little-endian uint32s.
func addMask(y []uint32, key []byte, sign int) {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic("secagg: " + err.Error()) // keys are 32 bytes by construction
	}
	stream := cipher.NewCTR(block, make([]byte, aes.BlockSize))
	buf := make([]byte, 4*4096)
	for off := 0; off < len(y); off += 4096 {
		n := min(4096, len(y)-off)
		b := buf[:4*n]
		clear(b)
		stream.XORKeyStream(b, b)
		for i := 0; i < n; i++ {
			w := uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
			if sign > 0 {
				y[off+i] += w
			} else {
				y[off+i] -= w
			}
		}
	}
}

// Reveal is what one member discloses in the fourth stage: its shares of
// the self-mask secrets of its surviving neighbours and of the mask secrets
// of its dropped neighbours, by owner. Never both for one owner.
type Reveal struct {
	From string            `json:"from"`
	Self map[string][]byte `json:"self,omitempty"`
	Mask map[string][]byte `json:"mask,omitempty"`
}

// Unmask is the fourth stage. survivors are the members that sent a masked
// input, dropped those that shared keys but sent none; inbox holds the
// ciphertexts the member's neighbours sent it in the second stage, by
// sender. The member reveals, for each of its neighbours among survivors,
// its share of that neighbour's self-mask secret (its own included when it
// survived), and for each among dropped, its share of that neighbour's mask
// secret. A name in both lists, or a ciphertext that does not open, is an
// error and reveals nothing.
func (m *Member) Unmask(pub map[string]PublicKeys, inbox map[string][]byte, survivors, dropped []string) (Reveal, error) {
	if err := m.g.checkPublic(pub); err != nil {
		return Reveal{}, err
	}
	if err := m.g.checkNames("survivors", survivors); err != nil {
		return Reveal{}, err
	}
	if err := m.g.checkNames("dropped", dropped); err != nil {
		return Reveal{}, err
	}
	surv, drop := setOf(survivors), setOf(dropped)
	for v := range surv {
		if drop[v] {
			return Reveal{}, fmt.Errorf("secagg: group %q: %s is named both a survivor and dropped; revealing both of its secrets would expose its input", m.g.ctx.Group, v)
		}
	}
	if drop[m.name] {
		return Reveal{}, fmt.Errorf("secagg: group %q: %s is asked to unmask but named dropped", m.g.ctx.Group, m.name)
	}
	r := Reveal{From: m.name, Self: map[string][]byte{}, Mask: map[string][]byte{}}
	for _, v := range m.g.Neighbours(m.name) {
		if !surv[v] && !drop[v] {
			continue
		}
		var self, mask []byte
		if v == m.name {
			s, _ := m.shares(m.idx)
			b, err := s.MarshalBinary()
			if err != nil {
				return Reveal{}, fmt.Errorf("secagg: %w", err)
			}
			self = b
		} else {
			ct, ok := inbox[v]
			if !ok {
				return Reveal{}, fmt.Errorf("secagg: group %q: no shares from %s in %s's inbox", m.g.ctx.Group, v, m.name)
			}
			k, ok := pub[v]
			if !ok {
				return Reveal{}, fmt.Errorf("secagg: group %q: no public keys of %s", m.g.ctx.Group, v)
			}
			aead, ad, err := channel(m.g, m.enc, k.Enc, v, m.name)
			if err != nil {
				return Reveal{}, err
			}
			plain, err := aead.Open(nil, make([]byte, aead.NonceSize()), ct, ad)
			if err != nil || len(plain) != 2*scalarSize {
				return Reveal{}, fmt.Errorf("secagg: group %q: the shares %s sent %s do not open", m.g.ctx.Group, v, m.name)
			}
			self, mask = plain[:scalarSize], plain[scalarSize:]
		}
		if surv[v] {
			r.Self[v] = bytes.Clone(self)
		} else {
			r.Mask[v] = bytes.Clone(mask)
		}
	}
	return r, nil
}

func setOf(list []string) map[string]bool {
	s := make(map[string]bool, len(list))
	for _, v := range list {
		s[v] = true
	}
	return s
}
