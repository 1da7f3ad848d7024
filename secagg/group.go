package secagg

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// The defaults of Config, Flower's SecAggPlusWorkflow's (clipping_range 8.0,
// quantization_range 2²², modulus_range 2³²).
const (
	DefaultClip        = 8.0
	DefaultQuantBits   = 22
	DefaultModulusBits = 32
)

// Context names one run of the protocol. Every key, mask and ciphertext of
// the run is bound to it, so nothing of one round or group can be replayed
// in another. It is public.
type Context struct {
	Campaign string `json:"campaign"`
	// Attempt is the campaign's attempt (0 and 1 both mean the first).
	Attempt int `json:"attempt,omitempty"`
	Round   int `json:"round"`
	// Group names the aggregation group within the round ("global",
	// "cluster-0", …).
	Group string `json:"group"`
}

// bytes is the Context's encoding: a version tag and each field
// length-prefixed, so that no two Contexts encode alike.
func (c Context) bytes() []byte {
	attempt := c.Attempt
	if attempt == 0 {
		attempt = 1
	}
	var b []byte
	field := func(s []byte) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(v int) { field(binary.BigEndian.AppendUint64(nil, uint64(int64(v)))) }
	field([]byte("ptopofl/secagg/v1"))
	field([]byte(c.Campaign))
	num(attempt)
	num(c.Round)
	field([]byte(c.Group))
	return b
}

// Config holds a run's parameters. Zero fields take their defaults
// (Group.Config reports the values in force).
type Config struct {
	// Shares is k, the number of shares of each member's secrets: one kept
	// by the member, one for each of its k−1 neighbours. Odd, at most the
	// group's size; 0 means DefaultShares(n).
	Shares int `json:"shares"`
	// Threshold is t, the number of shares that reconstruct a secret: a
	// member's secrets survive as long as t of its k share holders answer,
	// and fewer than t colluding members learn nothing of them. 0 means
	// DefaultThreshold(k).
	Threshold int `json:"threshold"`
	// Clip is c: every coordinate is clipped to [−c, c] before it is
	// quantised (MaskInput). 0 means DefaultClip.
	Clip float64 `json:"clip"`
	// QuantBits is b: coordinates are quantised to integers in
	// [0, 2ᵇ − 1] (MaskInput). 0 means DefaultQuantBits.
	QuantBits int `json:"quant_bits"`
	// ModulusBits is m: inputs and masks are summed modulo 2ᵐ, 32 (the
	// default, Flower's modulus_range 2³²) or 64 (for integer inputs
	// whose sum needs more room, MaskInts).
	ModulusBits int `json:"modulus_bits"`
}

// fill returns c with its zero fields given their defaults for a group
// of n members.
func (c Config) fill(n int) Config {
	if c.Shares == 0 {
		c.Shares = DefaultShares(n)
	}
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold(c.Shares)
	}
	if c.Clip == 0 {
		c.Clip = DefaultClip
	}
	if c.QuantBits == 0 {
		c.QuantBits = DefaultQuantBits
	}
	if c.ModulusBits == 0 {
		c.ModulusBits = DefaultModulusBits
	}
	return c
}

// check reports what is wrong with c (defaults filled in) for a group
// named group of n members.
func (c Config) check(group string, n int) error {
	switch {
	case c.Shares < 2 || c.Shares > n:
		return fmt.Errorf("secagg: group %q: shares %d must be between 2 and the group's size %d", group, c.Shares, n)
	case c.Shares < n && c.Shares%2 == 0:
		return fmt.Errorf("secagg: group %q: shares %d must be odd (the member and (k−1)/2 neighbours on each side of the ring) or the group's size %d", group, c.Shares, n)
	case c.Threshold < 1 || c.Threshold > c.Shares:
		return fmt.Errorf("secagg: group %q: threshold %d must be between 1 and shares %d", group, c.Threshold, c.Shares)
	case !(c.Clip > 0) || math.IsInf(c.Clip, 0):
		return fmt.Errorf("secagg: group %q: clipping range %v must be a positive number", group, c.Clip)
	case c.ModulusBits != 32 && c.ModulusBits != 64:
		return fmt.Errorf("secagg: group %q: modulus bits %d must be 32 or 64", group, c.ModulusBits)
	case c.QuantBits < 1 || c.QuantBits > min(c.ModulusBits-1, 52):
		// 52: the quantised values must be exact in a float64.
		return fmt.Errorf("secagg: group %q: quantisation bits %d must be between 1 and %d", group, c.QuantBits, min(c.ModulusBits-1, 52))
	case c.ModulusBits == 32 && uint64(n)*(uint64(1)<<c.QuantBits-1) >= 1<<32:
		return fmt.Errorf("secagg: group %q: %d members of %d-bit quantised values can exceed the modulus 2³²; use at most %d bits", group, n, c.QuantBits, 32-bits.Len(uint(n)))
	case c.ModulusBits == 64 && c.QuantBits+bits.Len(uint(n)) > 64:
		return fmt.Errorf("secagg: group %q: %d members of %d-bit quantised values can exceed the modulus 2⁶⁴; use at most %d bits", group, n, c.QuantBits, 64-bits.Len(uint(n)))
	}
	return nil
}

// mask is 2ᵐ − 1: a word reduced modulo 2ᵐ is w & mask.
func (c Config) mask() uint64 {
	if c.ModulusBits == 64 {
		return math.MaxUint64
	}
	return 1<<c.ModulusBits - 1
}

// DefaultShares is the degree SecAgg+ suggests for n members, logarithmic
// in n: k = 2⌈log₂ n⌉ + 1, or n when that is not smaller (every member then
// neighbours every other, as in SecAgg).
func DefaultShares(n int) int {
	if n <= 1 {
		return n
	}
	k := 2*bits.Len(uint(n-1)) + 1
	if k >= n {
		return n
	}
	return k
}

// DefaultThreshold is t = ⌈2k/3⌉, at least 2 when k ≥ 2: the ratio of
// Flower's SecAgg+ example (reconstruction_threshold 2 of num_shares 3). A
// member's secrets then survive the loss of a third of its share holders,
// and a coalition needs two thirds of them to learn a secret.
func DefaultThreshold(k int) int {
	t := (2*k + 2) / 3
	if k >= 2 && t < 2 {
		t = 2
	}
	return t
}

// Group is one run of the protocol over a fixed set of members.
type Group struct {
	ctx     Context
	cb      []byte
	cfg     Config
	members []string       // sorted
	index   map[string]int // position in members
	ring    []int          // ring order: ring[p] is the member index at position p
	pos     []int          // inverse of ring
}

// NewGroup checks cfg against members (names unique and non-empty, at least
// two) and places the members on the ring. The members' order is the
// sorted order of their names whatever order they are given in.
func NewGroup(ctx Context, members []string, cfg Config) (*Group, error) {
	n := len(members)
	if n < 2 {
		return nil, fmt.Errorf("secagg: group %q has %d members; secure aggregation needs at least 2", ctx.Group, n)
	}
	sorted := slices.Clone(members)
	slices.Sort(sorted)
	for i, m := range sorted {
		if m == "" {
			return nil, fmt.Errorf("secagg: group %q: a member without a name", ctx.Group)
		}
		if i > 0 && sorted[i-1] == m {
			return nil, fmt.Errorf("secagg: group %q: member %q given twice", ctx.Group, m)
		}
	}
	cfg = cfg.fill(n)
	if err := cfg.check(ctx.Group, n); err != nil {
		return nil, err
	}
	g := &Group{ctx: ctx, cb: ctx.bytes(), cfg: cfg, members: sorted, index: make(map[string]int, n)}
	for i, m := range sorted {
		g.index[m] = i
	}
	// The ring order is public: drawn from the Context alone, so the
	// server and every member place the members alike.
	seed := sha256.Sum256(append([]byte("ring\x00"), g.cb...))
	g.ring = rand.New(rand.NewChaCha8(seed)).Perm(n)
	g.pos = make([]int, n)
	for p, i := range g.ring {
		g.pos[i] = p
	}
	return g, nil
}

// Context returns the run's Context.
func (g *Group) Context() Context { return g.ctx }

// Config returns the parameters in force, defaults filled in.
func (g *Group) Config() Config { return g.cfg }

// Members returns the members in sorted order.
func (g *Group) Members() []string { return slices.Clone(g.members) }

// Has reports whether name is a member.
func (g *Group) Has(name string) bool { _, ok := g.index[name]; return ok }

// Neighbours returns the members that hold a share of name's secrets, name
// itself included, in sorted order: the (k−1)/2 members on either side of
// it on the ring, or every member when k is the group's size. The relation
// is symmetric. It panics on a name that is not a member (a programming
// error: callers check with Has).
func (g *Group) Neighbours(name string) []string {
	i, ok := g.index[name]
	if !ok {
		panic(fmt.Sprintf("secagg: %q is not a member of group %q", name, g.ctx.Group))
	}
	return g.neighbours(i)
}

func (g *Group) neighbours(i int) []string {
	n := len(g.members)
	if g.cfg.Shares >= n {
		return slices.Clone(g.members)
	}
	h := (g.cfg.Shares - 1) / 2
	p := g.pos[i]
	out := make([]string, 0, g.cfg.Shares)
	for off := -h; off <= h; off++ {
		out = append(out, g.members[g.ring[((p+off)%n+n)%n]])
	}
	slices.Sort(out)
	return out
}

// adjacent reports whether members a and b (indices) are neighbours.
func (g *Group) adjacent(a, b int) bool {
	n := len(g.members)
	if g.cfg.Shares >= n {
		return true
	}
	d := g.pos[a] - g.pos[b]
	if d < 0 {
		d = -d
	}
	d = min(d, n-d)
	return d <= (g.cfg.Shares-1)/2
}

// checkNames checks that every name of list is a member, at most once; what
// names the list in the error.
func (g *Group) checkNames(what string, list []string) error {
	seen := make(map[string]bool, len(list))
	for _, m := range list {
		if !g.Has(m) {
			return fmt.Errorf("secagg: group %q: %s names %q, not a member", g.ctx.Group, what, m)
		}
		if seen[m] {
			return fmt.Errorf("secagg: group %q: %s names %q twice", g.ctx.Group, what, m)
		}
		seen[m] = true
	}
	return nil
}

// ErrTooFew is the error of a run that cannot go on because too few members
// remain: a member with fewer than t share holders left, or survivors
// whose neighbour graph falls apart. The round goes on without secure
// aggregation's sum, as a quorum failure.
var ErrTooFew = errors.New("secagg: too few members remain")
