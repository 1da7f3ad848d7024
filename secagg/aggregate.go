package secagg

import (
	"bytes"
	"crypto/ecdh"
	"fmt"
	"slices"

	"github.com/cloudflare/circl/group"
	"github.com/cloudflare/circl/secretsharing"
)

// Transcript is everything the server holds of a run when it unmasks: the
// public keys advertised (stage 1), the members whose shares were
// delivered (stage 2), the masked inputs by member (stage 3: their senders
// are the survivors) and the reveals (stage 4). It is what the pipeline
// stores, and Aggregate is a function of it alone, so an auditor recomputes
// the sum from the stored objects.
//
// The masked inputs are given either in Masked, or, for inputs too large
// to hold all at once, as the list of their Senders and a Load function
// that reads one (each is read once, in Senders' order, and added to the
// sum before the next is read).
type Transcript struct {
	Public  map[string]PublicKeys
	Shared  []string
	Masked  map[string][]uint64
	Senders []string
	Load    func(member string) ([]uint64, error)
	Reveals []Reveal
}

// Survivors returns the members that sent a masked input, sorted.
func (t Transcript) Survivors() []string {
	if t.Masked == nil && t.Load != nil {
		out := slices.Clone(t.Senders)
		slices.Sort(out)
		return slices.Compact(out)
	}
	out := make([]string, 0, len(t.Masked))
	for m := range t.Masked {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// Dropped returns the members that shared keys but sent no masked input,
// sorted: their pairwise masks are in the survivors' inputs and the server
// removes them with their reconstructed mask secrets.
func (t Transcript) Dropped() []string {
	surv := setOf(t.Survivors())
	var out []string
	for _, m := range t.Shared {
		if !surv[m] {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// load returns survivor m's masked input.
func (t Transcript) load(m string) ([]uint64, error) {
	if t.Masked == nil && t.Load != nil {
		return t.Load(m)
	}
	return t.Masked[m], nil
}

// CheckUnmask says whether the server may ask for the fourth stage with
// these survivors: every survivor shared keys, the survivors' neighbour
// graph is connected (otherwise a part of it would be unmasked alone, and
// a part of one member is that member's input), and every secret to
// reconstruct — each survivor's self mask, each dropped member's mask key —
// has at least t share holders among the survivors. It fails with ErrTooFew
// when the run cannot finish.
func (g *Group) CheckUnmask(shared, survivors []string) error {
	if err := g.checkNames("the members that shared keys", shared); err != nil {
		return err
	}
	if err := g.checkNames("survivors", survivors); err != nil {
		return err
	}
	sh, sv := setOf(shared), setOf(survivors)
	for _, s := range survivors {
		if !sh[s] {
			return fmt.Errorf("secagg: group %q: %s sent a masked input without having shared keys", g.ctx.Group, s)
		}
	}
	if len(survivors) == 0 {
		return fmt.Errorf("%w: group %q: no member sent a masked input", ErrTooFew, g.ctx.Group)
	}
	if parts := g.components(survivors); parts > 1 {
		return fmt.Errorf("%w: group %q: the %d survivors fall into %d parts that share no mask; unmasking would reveal each part's sum", ErrTooFew, g.ctx.Group, len(survivors), parts)
	}
	for _, o := range shared {
		holders := 0
		for _, v := range g.Neighbours(o) {
			if sv[v] {
				holders++
			}
		}
		if holders < g.cfg.Threshold {
			return fmt.Errorf("%w: group %q: %d of %s's share holders survive, fewer than the threshold %d", ErrTooFew, g.ctx.Group, holders, o, g.cfg.Threshold)
		}
	}
	return nil
}

// components counts the connected parts of the neighbour graph restricted
// to list.
func (g *Group) components(list []string) int {
	idx := make([]int, len(list))
	for i, m := range list {
		idx[i] = g.index[m]
	}
	seen := make([]bool, len(list))
	parts := 0
	for s := range list {
		if seen[s] {
			continue
		}
		parts++
		stack := []int{s}
		seen[s] = true
		for len(stack) > 0 {
			a := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for b := range list {
				if !seen[b] && g.adjacent(idx[a], idx[b]) {
					seen[b] = true
					stack = append(stack, b)
				}
			}
		}
	}
	return parts
}

// Aggregate is the server's last step for quantised real inputs
// (MaskInput): the sum of the survivors' inputs, dequantised. It is
// AggregateInts followed by Dequantize.
func (g *Group) Aggregate(t Transcript) ([]float64, error) {
	sum, err := g.AggregateInts(t)
	if err != nil {
		return nil, err
	}
	return Dequantize(sum, len(t.Survivors()), g.cfg.Clip, g.cfg.QuantBits), nil
}

// AggregateInts is the server's last step: the sum, modulo 2ᵐ, of the
// survivors' integer inputs. It sums the masked inputs modulo 2ᵐ,
// reconstructs each survivor's self-mask secret and each dropped member's
// mask secret from the reveals (Shamir, at least t shares each), checks
// each against what the member advertised (the self-mask commitment, the
// mask public key), and removes the self masks and the dropped members'
// pairwise masks with the survivors. It fails, naming the member, when a
// secret has too few shares or does not match, and with CheckUnmask's
// errors.
func (g *Group) AggregateInts(t Transcript) ([]uint64, error) {
	if err := g.checkPublic(t.Public); err != nil {
		return nil, err
	}
	survivors, dropped := t.Survivors(), t.Dropped()
	if err := g.CheckUnmask(t.Shared, survivors); err != nil {
		return nil, err
	}
	for _, m := range survivors {
		if _, ok := t.Public[m]; !ok {
			return nil, fmt.Errorf("secagg: group %q: no public keys of survivor %s", g.ctx.Group, m)
		}
	}
	// The reveals first: a transcript that cannot be unmasked fails before
	// any masked input is read.
	selfShares, maskShares, err := g.collect(t.Reveals, setOf(survivors), setOf(dropped))
	if err != nil {
		return nil, err
	}
	selfKeys := make(map[string][]byte, len(survivors))
	for _, u := range survivors {
		secret, err := g.recover(u, "self-mask", selfShares[u])
		if err != nil {
			return nil, err
		}
		b, _ := secret.MarshalBinary()
		if !bytes.Equal(selfCommit(g.cb, u, secret), t.Public[u].SelfCommit) {
			return nil, fmt.Errorf("secagg: group %q: the shares of %s's self-mask secret reconstruct a secret it did not commit to", g.ctx.Group, u)
		}
		selfKeys[u] = selfMaskKey(g.cb, u, b)
	}
	dropKeys := make(map[string]*ecdh.PrivateKey, len(dropped))
	for _, d := range dropped {
		secret, err := g.recover(d, "mask", maskShares[d])
		if err != nil {
			return nil, err
		}
		key, err := maskKey(g.cb, d, secret)
		if err != nil {
			return nil, err
		}
		pub, ok := t.Public[d]
		if !ok || !bytes.Equal(key.PublicKey().Bytes(), pub.Mask) {
			return nil, fmt.Errorf("secagg: group %q: the shares of %s's mask secret reconstruct a key it did not advertise", g.ctx.Group, d)
		}
		dropKeys[d] = key
	}
	mod := g.cfg.mask()
	var sum []uint64
	for _, m := range survivors {
		y, err := t.load(m)
		if err != nil {
			return nil, fmt.Errorf("secagg: group %q: %s's masked input: %w", g.ctx.Group, m, err)
		}
		if sum == nil {
			sum = make([]uint64, len(y))
		}
		if len(y) != len(sum) {
			return nil, fmt.Errorf("secagg: group %q: %s's masked input has %d values, others %d", g.ctx.Group, m, len(y), len(sum))
		}
		for i, v := range y {
			if v > mod {
				return nil, fmt.Errorf("secagg: group %q: value %d of %s's masked input is not below the modulus 2^%d", g.ctx.Group, i, m, g.cfg.ModulusBits)
			}
			sum[i] = (sum[i] + v) & mod
		}
	}
	for _, u := range survivors {
		addMask(sum, selfKeys[u], -1, g.cfg.ModulusBits)
	}
	surv := setOf(survivors)
	for _, d := range dropped {
		di := g.index[d]
		for _, u := range g.Neighbours(d) {
			if u == d || !surv[u] {
				continue
			}
			pk, err := pairKey(g.cb, dropKeys[d], t.Public[u].Mask, d, u)
			if err != nil {
				return nil, err
			}
			// u added the mask with its own sign against d; take it out.
			addMask(sum, pk, -pairSign(g.index[u], di), g.cfg.ModulusBits)
		}
	}
	return sum, nil
}

// collect sorts the revealed shares by owner, checking that each reveal
// comes from a member, names only its neighbours, and that no owner's
// two secrets are both revealed.
func (g *Group) collect(reveals []Reveal, surv, drop map[string]bool) (self, mask map[string][]secretsharing.Share, err error) {
	self, mask = map[string][]secretsharing.Share{}, map[string][]secretsharing.Share{}
	seen := map[string]bool{}
	for _, r := range reveals {
		i, ok := g.index[r.From]
		if !ok {
			return nil, nil, fmt.Errorf("secagg: group %q: a reveal from %q, not a member", g.ctx.Group, r.From)
		}
		if seen[r.From] {
			return nil, nil, fmt.Errorf("secagg: group %q: two reveals from %s", g.ctx.Group, r.From)
		}
		seen[r.From] = true
		id := field.NewScalar().SetUint64(uint64(i + 1))
		add := func(kind string, shares map[string][]byte, want map[string]bool, into map[string][]secretsharing.Share) error {
			for owner, b := range shares {
				if !want[owner] {
					return fmt.Errorf("secagg: group %q: %s revealed a %s share of %s, which it was not asked for", g.ctx.Group, r.From, kind, owner)
				}
				if !g.Has(owner) || !g.adjacent(g.index[owner], i) {
					return fmt.Errorf("secagg: group %q: %s revealed a share of %s, which is not its neighbour", g.ctx.Group, r.From, owner)
				}
				v := field.NewScalar()
				if len(b) != scalarSize || v.UnmarshalBinary(b) != nil {
					return fmt.Errorf("secagg: group %q: %s's %s share of %s is malformed", g.ctx.Group, r.From, kind, owner)
				}
				into[owner] = append(into[owner], secretsharing.Share{ID: id.Copy(), Value: v})
			}
			return nil
		}
		if err := add("self-mask", r.Self, surv, self); err != nil {
			return nil, nil, err
		}
		if err := add("mask", r.Mask, drop, mask); err != nil {
			return nil, nil, err
		}
	}
	return self, mask, nil
}

// recover reconstructs owner's secret of the given kind from shares.
func (g *Group) recover(owner, kind string, shares []secretsharing.Share) (group.Scalar, error) {
	if len(shares) < g.cfg.Threshold {
		return nil, fmt.Errorf("%w: group %q: %d shares of %s's %s secret were revealed, fewer than the threshold %d", ErrTooFew, g.ctx.Group, len(shares), owner, kind, g.cfg.Threshold)
	}
	s, err := secretsharing.Recover(uint(g.cfg.Threshold-1), shares)
	if err != nil {
		return nil, fmt.Errorf("secagg: group %q: %s's %s secret: %w", g.ctx.Group, owner, kind, err)
	}
	return s, nil
}
