package secagg

import (
	"fmt"
	"slices"
)

// Neighbour is a member as another member sees it: its name and its index
// in the group's sorted member list, which is the point its Shamir shares
// are evaluated at (index + 1) and decides the sign of a pairwise mask.
type Neighbour struct {
	Name  string `json:"name"`
	Index int    `json:"index"`
}

// View is what one member needs to know of its group, and no more: the
// run's Context and Config, the group's size, and its own neighbours (the
// holders of its shares, itself included). The server gives each member
// its View (Group.View), so that a member learns the names of its O(log n)
// neighbours rather than the whole group's, as in SecAgg+, where the
// server tells each client its neighbours in the graph it drew.
type View struct {
	Context Context `json:"context"`
	// Config is the configuration in force (Group.Config: no zero field).
	Config Config `json:"config"`
	// Size is the number of members of the group.
	Size int       `json:"size"`
	Self Neighbour `json:"self"`
	// Neighbours are the holders of Self's shares, Self included, sorted
	// by name (Group.Neighbours).
	Neighbours []Neighbour `json:"neighbours"`
}

// View returns name's view of the group.
func (g *Group) View(name string) (View, error) {
	i, ok := g.index[name]
	if !ok {
		return View{}, fmt.Errorf("secagg: %q is not a member of group %q", name, g.ctx.Group)
	}
	v := View{Context: g.ctx, Config: g.cfg, Size: len(g.members), Self: Neighbour{Name: name, Index: i}}
	for _, m := range g.neighbours(i) {
		v.Neighbours = append(v.Neighbours, Neighbour{Name: m, Index: g.index[m]})
	}
	return v, nil
}

// Check reports what is wrong with a view, as a member checks the view the
// server sent it before it uses it: a configuration NewGroup would refuse
// for the size, a neighbour list that does not hold Self, names or indices
// given twice or out of range, or more or fewer neighbours than the
// configuration's shares.
func (v View) Check() error {
	if err := v.Config.check(v.Context.Group, v.Size); err != nil {
		return err
	}
	want := v.Config.Shares // at most the size: Config.check
	if len(v.Neighbours) != want {
		return fmt.Errorf("secagg: group %q: %s's view lists %d neighbours, want %d (the shares k = %d of a group of %d)", v.Context.Group, v.Self.Name, len(v.Neighbours), want, v.Config.Shares, v.Size)
	}
	names := map[string]bool{}
	indices := map[int]bool{}
	self := false
	for i, n := range v.Neighbours {
		switch {
		case n.Name == "":
			return fmt.Errorf("secagg: group %q: %s's view lists a neighbour without a name", v.Context.Group, v.Self.Name)
		case n.Index < 0 || n.Index >= v.Size:
			return fmt.Errorf("secagg: group %q: %s's view gives %s the index %d, outside the group of %d", v.Context.Group, v.Self.Name, n.Name, n.Index, v.Size)
		case names[n.Name] || indices[n.Index]:
			return fmt.Errorf("secagg: group %q: %s's view lists %s (index %d) twice", v.Context.Group, v.Self.Name, n.Name, n.Index)
		case i > 0 && v.Neighbours[i-1].Name > n.Name:
			return fmt.Errorf("secagg: group %q: %s's view does not list its neighbours in order", v.Context.Group, v.Self.Name)
		}
		names[n.Name], indices[n.Index] = true, true
		self = self || n == v.Self
	}
	if !self {
		return fmt.Errorf("secagg: group %q: %s's view does not list %s itself", v.Context.Group, v.Self.Name, v.Self.Name)
	}
	return nil
}

// names returns the neighbours' names, sorted.
func (v View) names() []string {
	out := make([]string, len(v.Neighbours))
	for i, n := range v.Neighbours {
		out[i] = n.Name
	}
	return out
}

// Has reports whether name is one of the view's neighbours (or Self).
func (v View) Has(name string) bool {
	return slices.ContainsFunc(v.Neighbours, func(n Neighbour) bool { return n.Name == name })
}
