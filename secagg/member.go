package secagg

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
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
// seed: keep it on the member's premises. It knows of the group only its
// View. It is not safe for concurrent use.
type Member struct {
	v    View
	cb   []byte
	name string
	idx  int
	nb   map[string]int // neighbour → index, the member included
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
	v, err := g.View(name)
	if err != nil {
		return nil, err
	}
	return v.Member(seed)
}

// Member returns the view's member's side of the run (Group.Member),
// after checking the view (View.Check).
func (v View) Member(seed [32]byte) (*Member, error) {
	if err := v.Check(); err != nil {
		return nil, err
	}
	m := &Member{v: v, cb: v.Context.bytes(), name: v.Self.Name, idx: v.Self.Index, seed: seed, nb: make(map[string]int, len(v.Neighbours))}
	for _, n := range v.Neighbours {
		m.nb[n.Name] = n.Index
	}
	var err error
	if m.enc, m.mask, m.selfSecret, m.maskSecret, err = memberKeys(m.cb, m.name, seed); err != nil {
		return nil, err
	}
	return m, nil
}

// memberKeys derives a member's two key pairs and two secrets from its
// seed, its name and the Context's encoding cb: they depend on nothing
// else, so a member can advertise its keys (AdvertisedKeys) before the
// group is formed.
func memberKeys(cb []byte, name string, seed [32]byte) (enc, mask *ecdh.PrivateKey, selfSecret, maskSecret group.Scalar, err error) {
	derive := func(purpose string) []byte { return kdf(seed[:], purpose, cb, []byte(name)) }
	if enc, err = ecdh.X25519().NewPrivateKey(derive("encryption key")); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("secagg: %w", err)
	}
	selfSecret = field.RandomScalar(drbg(derive("self-mask secret")))
	maskSecret = field.RandomScalar(drbg(derive("mask secret")))
	if mask, err = maskKey(cb, name, maskSecret); err != nil {
		return nil, nil, nil, nil, err
	}
	return enc, mask, selfSecret, maskSecret, nil
}

// AdvertisedKeys returns the keys member name advertises in the first
// stage of the run named by ctx (Member.PublicKeys), from its seed alone:
// the same keys its Member will hold once the server has formed the group
// and sent it its View.
func AdvertisedKeys(ctx Context, name string, seed [32]byte) (PublicKeys, error) {
	if name == "" {
		return PublicKeys{}, fmt.Errorf("secagg: group %q: a member without a name", ctx.Group)
	}
	cb := ctx.bytes()
	enc, mask, selfSecret, _, err := memberKeys(cb, name, seed)
	if err != nil {
		return PublicKeys{}, err
	}
	return PublicKeys{Enc: enc.PublicKey().Bytes(), Mask: mask.PublicKey().Bytes(), SelfCommit: selfCommit(cb, name, selfSecret)}, nil
}

// derive expands the member's seed into 32 bytes for purpose (HKDF-SHA256,
// RFC 5869, with the Context and the member's name in its info).
func (m *Member) derive(purpose string) []byte {
	return kdf(m.seed[:], purpose, m.cb, []byte(m.name))
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
func maskKey(cb []byte, name string, secret group.Scalar) (*ecdh.PrivateKey, error) {
	b, err := secret.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("secagg: %w", err)
	}
	k, err := ecdh.X25519().NewPrivateKey(kdf(b, "mask key", cb, []byte(name)))
	if err != nil {
		return nil, fmt.Errorf("secagg: %w", err)
	}
	return k, nil
}

// selfCommit is the commitment to a self-mask secret.
func selfCommit(cb []byte, name string, secret group.Scalar) []byte {
	b, _ := secret.MarshalBinary()
	return kdf(b, "self-mask commitment", cb, []byte(name))
}

// Name returns the member's name.
func (m *Member) Name() string { return m.name }

// PublicKeys is the first stage: what the member advertises.
func (m *Member) PublicKeys() PublicKeys {
	return PublicKeys{
		Enc:        m.enc.PublicKey().Bytes(),
		Mask:       m.mask.PublicKey().Bytes(),
		SelfCommit: selfCommit(m.cb, m.name, m.selfSecret),
	}
}

// shares returns the member's shares of its two secrets for the share
// holder at index holder: the polynomials are drawn from the seed, so a
// holder's shares are the same whichever other holders are asked for.
func (m *Member) shares(holder int) (self, mask group.Scalar) {
	if m.polySelf == nil {
		rnd := drbg(m.derive("share polynomials"))
		t := uint(m.v.Config.Threshold - 1) // circl's t is the polynomial's degree
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
		if err := k.check(g.ctx.Group, name); err != nil {
			return err
		}
	}
	return nil
}

// check reports a key of k that is not well formed.
func (k PublicKeys) check(group, name string) error {
	if _, err := ecdh.X25519().NewPublicKey(k.Enc); err != nil {
		return fmt.Errorf("secagg: group %q: %s's encryption key: %w", group, name, err)
	}
	if _, err := ecdh.X25519().NewPublicKey(k.Mask); err != nil {
		return fmt.Errorf("secagg: group %q: %s's mask key: %w", group, name, err)
	}
	if len(k.SelfCommit) != 32 {
		return fmt.Errorf("secagg: group %q: %s's self-mask commitment has %d bytes, want 32", group, name, len(k.SelfCommit))
	}
	return nil
}

// neighbourKeys checks the keys pub holds of the member's neighbours (the
// keys of others, which it has no use for, are left aside) and returns
// them.
func (m *Member) neighbourKeys(pub map[string]PublicKeys) (map[string]PublicKeys, error) {
	out := make(map[string]PublicKeys, len(m.nb))
	for _, n := range m.v.Neighbours {
		k, ok := pub[n.Name]
		if !ok {
			continue
		}
		if err := k.check(m.v.Context.Group, n.Name); err != nil {
			return nil, err
		}
		out[n.Name] = k
	}
	return out, nil
}

// checkNames checks that list names no member twice and nothing empty;
// what names the list in the error.
func (m *Member) checkNames(what string, list []string) error {
	seen := make(map[string]bool, len(list))
	for _, v := range list {
		if v == "" {
			return fmt.Errorf("secagg: group %q: %s names a member without a name", m.v.Context.Group, what)
		}
		if seen[v] {
			return fmt.Errorf("secagg: group %q: %s names %q twice", m.v.Context.Group, what, v)
		}
		seen[v] = true
	}
	return nil
}

// channel returns the AEAD that carries shares from one member to another:
// AES-256-GCM under HKDF of their X25519 agreement, with the direction in
// the derivation so that each key encrypts one message; the nonce is then
// zero and the additional data binds the Context and both names.
func channel(cb []byte, own *ecdh.PrivateKey, peer []byte, from, to string) (cipher.AEAD, []byte, error) {
	pk, err := ecdh.X25519().NewPublicKey(peer)
	if err != nil {
		return nil, nil, fmt.Errorf("secagg: %s's encryption key: %w", to, err)
	}
	z, err := own.ECDH(pk)
	if err != nil {
		return nil, nil, fmt.Errorf("secagg: agreement between %s and %s: %w", from, to, err)
	}
	ad := kdf(nil, "share channel ad", cb, []byte(from), []byte(to))
	block, err := aes.NewCipher(kdf(z, "share channel", cb, []byte(from), []byte(to)))
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
// that advertised them (those of the member's neighbours are used, the
// others ignored); the member encrypts to each of its neighbours among
// them (itself aside) that neighbour's shares of its two secrets, and
// returns the ciphertexts by recipient. It fails with ErrTooFew when fewer
// than t of its share holders (itself included) advertised keys: its
// secrets could not be reconstructed.
func (m *Member) ShareKeys(pub map[string]PublicKeys) (map[string][]byte, error) {
	nk, err := m.neighbourKeys(pub)
	if err != nil {
		return nil, err
	}
	if _, ok := nk[m.name]; !ok {
		return nil, fmt.Errorf("secagg: group %q: the public keys do not include %s's own", m.v.Context.Group, m.name)
	}
	out := map[string][]byte{}
	holders := 0
	for _, n := range m.v.Neighbours {
		k, ok := nk[n.Name]
		if !ok {
			continue
		}
		holders++
		if n.Name == m.name {
			continue
		}
		self, mask := m.shares(n.Index)
		plain := make([]byte, 0, 2*scalarSize)
		for _, s := range []group.Scalar{self, mask} {
			b, err := s.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("secagg: %w", err)
			}
			plain = append(plain, b...)
		}
		aead, ad, err := channel(m.cb, m.enc, k.Enc, m.name, n.Name)
		if err != nil {
			return nil, err
		}
		out[n.Name] = aead.Seal(nil, make([]byte, aead.NonceSize()), plain, ad)
	}
	if holders < m.v.Config.Threshold {
		return nil, fmt.Errorf("%w: group %q: %d of %s's %d share holders advertised keys, fewer than the threshold %d", ErrTooFew, m.v.Context.Group, holders, m.name, m.v.Config.Shares, m.v.Config.Threshold)
	}
	return out, nil
}

// MaskInput is the third stage for a real vector x: x quantised (Quantize,
// with the member's own rounding stream, Config.Clip and Config.QuantBits)
// and masked (MaskInts). It returns the masked vector and how many
// coordinates were clipped.
func (m *Member) MaskInput(x []float64, pub map[string]PublicKeys, shared []string) ([]uint64, int, error) {
	y, clipped, err := Quantize(x, m.v.Config.Clip, m.v.Config.QuantBits, drbg(m.derive("rounding")))
	if err != nil {
		return nil, 0, err
	}
	if y, err = m.MaskInts(y, pub, shared); err != nil {
		return nil, 0, err
	}
	return y, clipped, nil
}

// MaskInts is the third stage for an input already in integers modulo 2ᵐ
// (each value below 2ᵐ; a negative integer v is 2ᵐ + v, as Signed reads it
// back): y plus the self mask, plus for each neighbour v in shared (the
// members whose shares were delivered, v ≠ the member) the pairwise mask,
// added when the member's index is below v's and subtracted otherwise, all
// modulo 2ᵐ. y is changed in place and returned. The member must itself be
// in shared; names in shared that are not its neighbours are ignored.
func (m *Member) MaskInts(y []uint64, pub map[string]PublicKeys, shared []string) ([]uint64, error) {
	nk, err := m.neighbourKeys(pub)
	if err != nil {
		return nil, err
	}
	if err := m.checkNames("the members that shared keys", shared); err != nil {
		return nil, err
	}
	in := setOf(shared)
	if !in[m.name] {
		return nil, fmt.Errorf("secagg: group %q: %s is not among the members that shared keys", m.v.Context.Group, m.name)
	}
	mod := m.v.Config.mask()
	for i, w := range y {
		if w > mod {
			return nil, fmt.Errorf("secagg: group %q: value %d of %s's input is %d, not below the modulus 2^%d", m.v.Context.Group, i, m.name, w, m.v.Config.ModulusBits)
		}
	}
	selfKey, err := m.selfMaskKey()
	if err != nil {
		return nil, err
	}
	addMask(y, selfKey, +1, m.v.Config.ModulusBits)
	for _, n := range m.v.Neighbours {
		if n.Name == m.name || !in[n.Name] {
			continue
		}
		k, ok := nk[n.Name]
		if !ok {
			return nil, fmt.Errorf("secagg: group %q: %s shared keys but its public keys are missing", m.v.Context.Group, n.Name)
		}
		key, err := pairKey(m.cb, m.mask, k.Mask, m.name, n.Name)
		if err != nil {
			return nil, err
		}
		addMask(y, key, pairSign(m.idx, n.Index), m.v.Config.ModulusBits)
	}
	return y, nil
}

func (m *Member) selfMaskKey() ([]byte, error) {
	b, err := m.selfSecret.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("secagg: %w", err)
	}
	return selfMaskKey(m.cb, m.name, b), nil
}

func selfMaskKey(cb []byte, name string, secret []byte) []byte {
	return kdf(secret, "self mask", cb, []byte(name))
}

// pairKey is the key of the mask between members a and b: HKDF of their
// X25519 agreement with both names in sorted order, so either side (or the
// server, with a dropped member's reconstructed key) derives it alike.
func pairKey(cb []byte, own *ecdh.PrivateKey, peer []byte, a, b string) ([]byte, error) {
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
	return kdf(z, "pairwise mask", cb, []byte(a), []byte(b)), nil
}

// pairSign is the sign with which member i adds its mask with member j:
// +1 for the lower index, −1 for the higher, so each pair cancels.
func pairSign(i, j int) int {
	if i < j {
		return +1
	}
	return -1
}

// addMask adds sign times the mask stream of key to y, modulo 2ᵐ (m =
// modBits, 32 or 64): the stream is AES-256-CTR of zeros under key, read
// as little-endian words of m bits.
func addMask(y []uint64, key []byte, sign int, modBits int) {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic("secagg: " + err.Error()) // keys are 32 bytes by construction
	}
	stream := cipher.NewCTR(block, make([]byte, aes.BlockSize))
	w := modBits / 8
	mod := uint64(math.MaxUint64)
	if modBits < 64 {
		mod = 1<<modBits - 1
	}
	const chunk = 4096
	buf := make([]byte, w*chunk)
	for off := 0; off < len(y); off += chunk {
		n := min(chunk, len(y)-off)
		b := buf[:w*n]
		clear(b)
		stream.XORKeyStream(b, b)
		for i := 0; i < n; i++ {
			var v uint64
			if w == 4 {
				v = uint64(binary.LittleEndian.Uint32(b[4*i:]))
			} else {
				v = binary.LittleEndian.Uint64(b[8*i:])
			}
			if sign > 0 {
				y[off+i] = (y[off+i] + v) & mod
			} else {
				y[off+i] = (y[off+i] - v) & mod
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
// input, dropped those that shared keys but sent none (of either list, the
// member's neighbours are read and the others ignored); inbox holds the
// ciphertexts the member's neighbours sent it in the second stage, by
// sender. The member reveals, for each of its neighbours among survivors,
// its share of that neighbour's self-mask secret (its own included when it
// survived), and for each among dropped, its share of that neighbour's mask
// secret. A name in both lists, or a ciphertext that does not open, is an
// error and reveals nothing.
func (m *Member) Unmask(pub map[string]PublicKeys, inbox map[string][]byte, survivors, dropped []string) (Reveal, error) {
	nk, err := m.neighbourKeys(pub)
	if err != nil {
		return Reveal{}, err
	}
	if err := m.checkNames("survivors", survivors); err != nil {
		return Reveal{}, err
	}
	if err := m.checkNames("dropped", dropped); err != nil {
		return Reveal{}, err
	}
	surv, drop := setOf(survivors), setOf(dropped)
	for _, v := range survivors {
		if drop[v] {
			return Reveal{}, fmt.Errorf("secagg: group %q: %s is named both a survivor and dropped; revealing both of its secrets would expose its input", m.v.Context.Group, v)
		}
	}
	if drop[m.name] {
		return Reveal{}, fmt.Errorf("secagg: group %q: %s is asked to unmask but named dropped", m.v.Context.Group, m.name)
	}
	r := Reveal{From: m.name, Self: map[string][]byte{}, Mask: map[string][]byte{}}
	for _, n := range m.v.Neighbours {
		v := n.Name
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
				return Reveal{}, fmt.Errorf("secagg: group %q: no shares from %s in %s's inbox", m.v.Context.Group, v, m.name)
			}
			k, ok := nk[v]
			if !ok {
				return Reveal{}, fmt.Errorf("secagg: group %q: no public keys of %s", m.v.Context.Group, v)
			}
			aead, ad, err := channel(m.cb, m.enc, k.Enc, v, m.name)
			if err != nil {
				return Reveal{}, err
			}
			plain, err := aead.Open(nil, make([]byte, aead.NonceSize()), ct, ad)
			if err != nil || len(plain) != 2*scalarSize {
				return Reveal{}, fmt.Errorf("secagg: group %q: the shares %s sent %s do not open", m.v.Context.Group, v, m.name)
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
