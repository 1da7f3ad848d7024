package secagg

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestViewMember: a member made from its View (what the server sends it)
// holds the keys of the member made from the whole group, and advertises
// the keys AdvertisedKeys derives before any group exists; the View
// survives a JSON round trip, as it does through the store.
func TestViewMember(t *testing.T) {
	ctx := Context{Campaign: "c", Attempt: 2, Round: 5, Group: "cluster-1"}
	g, err := NewGroup(ctx, names(50), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range g.Members() {
		v, err := g.View(name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		var back View
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		mv, err := back.Member(seedOf(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mg, _ := g.Member(name, seedOf(name))
		adv, err := AdvertisedKeys(ctx, name, seedOf(name))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []PublicKeys{mg.PublicKeys(), adv} {
			pk := mv.PublicKeys()
			if string(pk.Enc) != string(k.Enc) || string(pk.Mask) != string(k.Mask) || string(pk.SelfCommit) != string(k.SelfCommit) {
				t.Fatalf("%s: the view's member advertises other keys", name)
			}
		}
		if got := back.names(); !slices.Equal(got, g.Neighbours(name)) {
			t.Fatalf("%s: view neighbours %v, group neighbours %v", name, got, g.Neighbours(name))
		}
	}
}

// TestViewCheckRefuses: a view the server got wrong is refused before
// the member uses it.
func TestViewCheckRefuses(t *testing.T) {
	g, err := NewGroup(Context{Campaign: "c", Round: 1, Group: "g"}, names(20), Config{})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := g.View("site3")
	for i, c := range []struct {
		change func(v *View)
		want   string
	}{
		{func(v *View) { v.Neighbours = v.Neighbours[1:] }, "lists 10 neighbours, want 11"}, // 0: k = 2·5+1
		{func(v *View) {
			v.Neighbours = slices.DeleteFunc(slices.Clone(v.Neighbours), func(n Neighbour) bool { return n == v.Self })
			v.Neighbours = append(v.Neighbours, Neighbour{Name: "zz", Index: v.Self.Index})
		}, "does not list site3 itself"}, // 1: another name at its index
		{func(v *View) { v.Neighbours[len(v.Neighbours)-1].Index = v.Neighbours[0].Index }, "twice"}, // 2
		{func(v *View) { v.Neighbours[0].Index = 20 }, "outside the group of 20"},                    // 3
		{func(v *View) { v.Neighbours[0], v.Neighbours[1] = v.Neighbours[1], v.Neighbours[0] }, "in order"},
		{func(v *View) { v.Config.Threshold = 12 }, "between 1 and shares 11"}, // 5
		{func(v *View) { v.Config.Shares = 10 }, "must be odd"},                // 6
		{func(v *View) { v.Neighbours[0].Name = "" }, "without a name"},        // 7
	} {
		v := good
		v.Neighbours = slices.Clone(good.Neighbours)
		c.change(&v)
		if _, err := v.Member(seedOf("site3")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: %v, want an error containing %q", i, err, c.want)
		}
	}
}

// TestIntegerSum64: integer inputs (MaskInts) of either sign under a
// 2⁶⁴ modulus sum exactly, read back with Signed, with a member dropped
// after sharing and one silent at unmasking; the same under 2³² with
// values that fit.
func TestIntegerSum64(t *testing.T) {
	for _, mb := range []int{64, 32} {
		ctx := Context{Campaign: "c", Round: 1, Group: "global"}
		n, dim := 9, 40
		g, err := NewGroup(ctx, names(n), Config{ModulusBits: mb})
		if err != nil {
			t.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(7, uint64(mb)))
		span := int64(1) << 40
		if mb == 32 {
			span = 1 << 26
		}
		x := map[string][]int64{}
		tr := Transcript{Public: map[string]PublicKeys{}, Masked: map[string][]uint64{}}
		members := map[string]*Member{}
		for _, m := range g.Members() {
			members[m], _ = g.Member(m, seedOf(m))
			tr.Public[m] = members[m].PublicKeys()
			v := make([]int64, dim)
			for i := range v {
				v[i] = rnd.Int64N(2*span) - span
			}
			x[m] = v
		}
		inbox := map[string]map[string][]byte{}
		for _, m := range g.Members() {
			out, err := members[m].ShareKeys(tr.Public)
			if err != nil {
				t.Fatal(err)
			}
			tr.Shared = append(tr.Shared, m)
			for to, ct := range out {
				if inbox[to] == nil {
					inbox[to] = map[string][]byte{}
				}
				inbox[to][m] = ct
			}
		}
		for _, m := range g.Members() {
			if m == "site4" { // dropped after sharing
				continue
			}
			y := make([]uint64, dim)
			for i, v := range x[m] {
				y[i] = Unsigned(v, mb)
			}
			if tr.Masked[m], err = members[m].MaskInts(y, tr.Public, tr.Shared); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range tr.Survivors() {
			if m == "site7" { // silent at unmasking
				continue
			}
			rv, err := members[m].Unmask(tr.Public, inbox[m], tr.Survivors(), tr.Dropped())
			if err != nil {
				t.Fatal(err)
			}
			tr.Reveals = append(tr.Reveals, rv)
		}
		sum, err := g.AggregateInts(tr)
		if err != nil {
			t.Fatalf("%d-bit: %v", mb, err)
		}
		for i := 0; i < dim; i++ {
			want := int64(0)
			for _, m := range tr.Survivors() {
				want += x[m][i]
			}
			if got := Signed(sum[i], mb); got != want {
				t.Fatalf("%d-bit: coordinate %d: sum %d, want %d", mb, i, got, want)
			}
		}
		// The same transcript read one masked input at a time.
		streamed := tr
		streamed.Masked, streamed.Senders = nil, tr.Survivors()
		reads := 0
		streamed.Load = func(m string) ([]uint64, error) { reads++; return slices.Clone(tr.Masked[m]), nil }
		again, err := g.AggregateInts(streamed)
		if err != nil || !slices.Equal(again, sum) || reads != len(tr.Masked) {
			t.Fatalf("%d-bit: streamed sum differs (%v, %d reads)", mb, err, reads)
		}
		streamed.Load = func(string) ([]uint64, error) { return nil, errors.New("object gone") }
		if _, err := g.AggregateInts(streamed); err == nil || !strings.Contains(err.Error(), "object gone") {
			t.Fatalf("%d-bit: a load error: %v", mb, err)
		}
	}
}

// TestMaskIntsRefusesWideValue: a value not below the modulus is refused.
func TestMaskIntsRefusesWideValue(t *testing.T) {
	g, _ := NewGroup(Context{Campaign: "c", Round: 1, Group: "g"}, names(3), Config{})
	m, _ := g.Member("site0", seedOf("site0"))
	pub := map[string]PublicKeys{"site0": m.PublicKeys()}
	if _, err := m.MaskInts([]uint64{1, 1 << 32}, pub, []string{"site0"}); err == nil || !strings.Contains(err.Error(), "value 1") {
		t.Fatalf("a 33-bit value under 2³²: %v", err)
	}
}

// TestEncodeMasked: the byte form reads back word for word under both
// moduli, and a truncated or foreign object is refused.
func TestEncodeMasked(t *testing.T) {
	for _, mb := range []int{32, 64} {
		y := []uint64{0, 1, 1<<32 - 1, 12345}
		if mb == 64 {
			y = append(y, 1<<63+5)
		}
		b := EncodeMasked(y, mb)
		back, bits, err := DecodeMasked(b)
		if err != nil || bits != mb || !slices.Equal(back, y) {
			t.Fatalf("%d-bit: %v %d %v", mb, back, bits, err)
		}
		if _, _, err := DecodeMasked(b[:len(b)-1]); err == nil || !strings.Contains(err.Error(), "holds") {
			t.Fatalf("%d-bit truncated: %v", mb, err)
		}
	}
	if _, _, err := DecodeMasked([]byte("PAR1 not a masked input at all")); err == nil || !strings.Contains(err.Error(), "not a masked input") {
		t.Fatalf("foreign bytes: %v", err)
	}
}

// TestSigned: Signed and Unsigned are inverse on [−2ᵐ⁻¹, 2ᵐ⁻¹).
func TestSigned(t *testing.T) {
	for i, c := range []struct {
		v  int64
		mb int
		w  uint64
	}{
		{-1, 32, 1<<32 - 1}, // 0
		{-(1 << 31), 32, 1 << 31},
		{1<<31 - 1, 32, 1<<31 - 1},
		{-1, 64, 1<<64 - 1},
		{-(1 << 63), 64, 1 << 63},
		{42, 64, 42},
	} {
		if w := Unsigned(c.v, c.mb); w != c.w {
			t.Errorf("%d: Unsigned(%d, %d) = %d, want %d", i, c.v, c.mb, w, c.w)
		}
		if v := Signed(c.w, c.mb); v != c.v {
			t.Errorf("%d: Signed(%d, %d) = %d, want %d", i, c.w, c.mb, v, c.v)
		}
	}
}
