package pipeline

import (
	"strings"

	"github.com/ptopofl/ptopofl/secagg"
)

// Secure aggregation (hyperparameters secure_aggregation "secagg+"): the
// round's training is followed by the four stages of SecAgg+ per
// aggregation group (package secagg), and the server aggregates from each
// group's sum, never reading a site's model. The site activities and their
// payloads are below; the workflow's side is workflows/secagg.go.

// The fan-out phases a secure aggregation adds after training. A site
// dropped in one is recorded with it (SiteDrop.Phase).
const (
	// PhaseSecAggShare: the site encrypts shares of its secrets to its
	// neighbours (SecAgg's second stage).
	PhaseSecAggShare = "secagg_share"
	// PhaseSecAggMask: the site weighs its update and sends it masked
	// (the third stage).
	PhaseSecAggMask = "secagg_mask"
	// PhaseSecAggUnmask: the site reveals the shares the server needs to
	// unmask the sum (the fourth stage). A site dropped here still counts
	// in its group's sum: its masked input arrived.
	PhaseSecAggUnmask = "secagg_unmask"
)

// The activities of a secure aggregation.
const (
	// Site activities (the first stage, advertising keys, is part of
	// ActivityTrainLocal).
	ActivitySecAggShare  = "SecAggShare"  // SecAggShareInput → SecAggShareOutput
	ActivitySecAggMask   = "SecAggMask"   // SecAggMaskInput → SecAggMaskOutput
	ActivitySecAggUnmask = "SecAggUnmask" // SecAggUnmaskInput → SecAggUnmaskOutput

	// Server activities (local activities of the round).
	ActivitySecAggPlan  = "SecAggPlan"  // SecAggPlanInput → SecAggPlanOutput
	ActivitySecAggRoute = "SecAggRoute" // SecAggRouteInput → SecAggRouteOutput
	ActivitySecAggCheck = "SecAggCheck" // SecAggCheckInput → SecAggCheckOutput
	ActivitySecAggSum   = "SecAggSum"   // SecAggSumInput → SecAggSumOutput
)

// The manifest roles of a secure aggregation's objects.
const (
	RoleSecAggPublic = "secagg_public" // a group's members, configuration and public keys (server)
	RoleSecAggShares = "secagg_shares" // a site's encrypted shares, by recipient
	RoleSecAggMasked = "secagg_masked" // a site's masked input
	RoleSecAggReveal = "secagg_reveal" // the shares a site revealed for unmasking
	RoleSecAggSum    = "secagg_sum"    // a group's unmasked sum of weighted updates (server)
)

// ErrTypeSecAgg is the error type of a site's refusal to take a stage of
// secure aggregation any further (not retried): too few of its
// neighbours advertised keys to hold its secrets, or the server asked it
// to reveal for another set of survivors than it already revealed for.
const ErrTypeSecAgg = "SecAggRefused"

// ErrTypeSecAggTooFew is the error type of a group's sum that cannot be
// unmasked because too few of its survivors revealed their shares: the
// round fails under its quorum with the reason.
const ErrTypeSecAggTooFew = "SecAggTooFew"

// KeptBucket is the Bucket of a reference to an object a site keeps on
// its own premises instead of in S3 (under secure aggregation: its trained
// model, control-variate update and method state): "site:<site>", which no
// S3 bucket name can be. Only that site reads it; the workflow passes the
// reference back to it and records it in no manifest.
func KeptBucket(site string) string { return "site:" + site }

// IsKept reports whether ref points at an object a site keeps (KeptBucket).
func IsKept(ref *ArtifactRef) bool { return ref != nil && strings.HasPrefix(ref.Bucket, "site:") }

// SecAggTrain tells a site's training that the round aggregates securely,
// and in which group: the site keeps its trained model, control-variate
// update and state on its own premises and advertises its keys for that
// group's run (the first stage).
type SecAggTrain struct {
	Group string `json:"group"`
}

// SecAggAdvert is what a site's training returns under secure
// aggregation: its advertised public keys (the first stage) and the
// references of what it keeps for the masked input (KeptBucket).
type SecAggAdvert struct {
	Group   string            `json:"group"`
	Keys    secagg.PublicKeys `json:"keys"`
	Model   ArtifactRef       `json:"model"`
	Control *ArtifactRef      `json:"control,omitempty"`
}

// SecAggGroupFormed is an aggregation group as the round forms it before
// training (aggregation.FormGroups): its name and members, in spec order.
type SecAggGroupFormed struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

// SecAggSiteKeys is one site's advertised keys.
type SecAggSiteKeys struct {
	Site string            `json:"site"`
	Keys secagg.PublicKeys `json:"keys"`
}

// SiteCount is a site's training row count, as its training reported it.
type SiteCount struct {
	Site     string `json:"site"`
	NumTrain int    `json:"n_train"`
}

// SecAggPlanInput asks the server to plan the round's secure aggregation
// once the sites have trained: each group's configuration and the view
// each member gets (written to S3), and each site's weight, from counts
// and descriptors alone.
type SecAggPlanInput struct {
	ServerCall
	Groups []SecAggGroupFormed `json:"groups"`
	// Advertised are the keys of the sites that trained, in spec order.
	Advertised []SecAggSiteKeys `json:"advertised"`
	Counts     []SiteCount      `json:"counts"`
	// Clustering and Descriptors are pTopoFL's, as Aggregate reads them.
	Clustering  *ArtifactRef   `json:"clustering,omitempty"`
	Descriptors []SiteArtifact `json:"descriptors,omitempty"`
	// Float32 says the models are stored as float32.
	Float32 bool `json:"float32,omitempty"`
}

// SecAggGroupPlan is one group's run: its members (every site formed
// into it, in spec order, whether it trained or not), the configuration
// in force, and its public record (artifact.RoundKeys.SecAggPublic).
type SecAggGroupPlan struct {
	Name    string        `json:"name"`
	Members []string      `json:"members"`
	Config  secagg.Config `json:"config"`
	Public  ArtifactRef   `json:"public"`
}

// SecAggSitePlan is what the server decided for one site that trained:
// its group, its view (artifact.RoundKeys.SecAggView) and the weights it
// applies to its update before masking: Weight to θ − θ_start,
// ControlWeight (SCAFFOLD) to its control-variate update.
type SecAggSitePlan struct {
	Site          string      `json:"site"`
	Group         string      `json:"group"`
	View          ArtifactRef `json:"view"`
	Weight        float64     `json:"weight"`
	ControlWeight float64     `json:"control_weight,omitempty"`
}

// SecAggPlanOutput is the plan, groups and sites in spec order.
type SecAggPlanOutput struct {
	Groups []SecAggGroupPlan `json:"groups"`
	Sites  []SecAggSitePlan  `json:"sites"`
	Spent
}

// SecAggShareInput asks a site for the second stage: its shares,
// encrypted to its neighbours.
type SecAggShareInput struct {
	SiteCall
	Group string      `json:"group"`
	View  ArtifactRef `json:"view"`
}

// SecAggShareOutput: the ciphertexts are at artifact.RoundKeys.SecAggShares.
type SecAggShareOutput struct {
	Shares ArtifactRef `json:"shares"`
	Spent
}

// SecAggRouteInput asks the server to forward the shares of each group's
// members to their recipients (artifact.RoundKeys.SecAggInbox).
type SecAggRouteInput struct {
	ServerCall
	Groups []SecAggRouteGroup `json:"groups"`
}

// SecAggRouteGroup is one group's shares, by sender, in spec order.
type SecAggRouteGroup struct {
	Name   string         `json:"name"`
	Shares []SiteArtifact `json:"shares"`
}

// SecAggRouteOutput is each recipient's inbox, in the order of the groups
// and of their members.
type SecAggRouteOutput struct {
	Inboxes []SiteArtifact `json:"inboxes"`
	Spent
}

// SecAggMaskInput asks a site for the third stage: its update weighted and
// masked.
type SecAggMaskInput struct {
	SiteCall
	Group string      `json:"group"`
	View  ArtifactRef `json:"view"`
	// Inbox is the site's inbox (SecAggRoute): its senders are the
	// neighbours whose shares were delivered, with whom it masks.
	Inbox         ArtifactRef `json:"inbox"`
	Weight        float64     `json:"weight"`
	ControlWeight float64     `json:"control_weight,omitempty"`
	// StartModel is the model the site trained from (nil: its own
	// initialisation, and its update is its model); Model and Control are
	// what its training kept (SecAggAdvert).
	StartModel *ArtifactRef `json:"start_model,omitempty"`
	Model      ArtifactRef  `json:"model"`
	Control    *ArtifactRef `json:"control,omitempty"`
}

// SecAggMaskOutput: the masked input is at artifact.RoundKeys.SecAggMasked.
type SecAggMaskOutput struct {
	Masked ArtifactRef `json:"masked"`
	Spent
	Released
}

// SecAggCheckInput asks the server whether each group can be unmasked with
// its survivors (secagg.Group.CheckUnmask).
type SecAggCheckInput struct {
	ServerCall
	Groups []SecAggCheckGroup `json:"groups"`
}

// SecAggCheckGroup is a group's run so far: who shared keys and who sent a
// masked input, in spec order.
type SecAggCheckGroup struct {
	Plan      SecAggGroupPlan `json:"plan"`
	Shared    []string        `json:"shared"`
	Survivors []string        `json:"survivors"`
}

// SecAggCheckOutput says why a group cannot be unmasked ("" when every
// group can), and otherwise what each survivor is told in the fourth
// stage, in the order of the groups and their survivors.
type SecAggCheckOutput struct {
	Failure string             `json:"failure,omitempty"`
	Unmask  []SecAggUnmaskList `json:"unmask,omitempty"`
	Spent
}

// SecAggUnmaskList is what one survivor is told of its neighbours in the
// fourth stage: those that sent a masked input, and those that shared
// keys but sent none, each sorted.
type SecAggUnmaskList struct {
	Site      string   `json:"site"`
	Survivors []string `json:"survivors"`
	Dropped   []string `json:"dropped,omitempty"`
}

// SecAggUnmaskInput asks a site for the fourth stage: its shares of its
// surviving neighbours' self-mask secrets and of its dropped neighbours'
// mask secrets.
type SecAggUnmaskInput struct {
	SiteCall
	Group string      `json:"group"`
	View  ArtifactRef `json:"view"`
	Inbox ArtifactRef `json:"inbox"`
	// Survivors and Dropped are the site's neighbours that sent a masked
	// input and those that shared keys but sent none, sorted.
	Survivors []string `json:"survivors"`
	Dropped   []string `json:"dropped,omitempty"`
}

// SecAggUnmaskOutput: the shares are at artifact.RoundKeys.SecAggReveal.
type SecAggUnmaskOutput struct {
	Reveal ArtifactRef `json:"reveal"`
	Spent
}

// SecAggSumInput asks the server to unmask each group's sum and aggregate
// from the sums, as Aggregate does from the models.
type SecAggSumInput struct {
	ServerCall
	Groups []SecAggSumGroup `json:"groups"`
	Sites  []SecAggSitePlan `json:"sites"`
	Counts []SiteCount      `json:"counts"`
	Starts []SiteArtifact   `json:"starts,omitempty"` // the model each site trained from (none: its own initialisation)
	// As AggregateInput.
	Clustering  *ArtifactRef   `json:"clustering,omitempty"`
	Descriptors []SiteArtifact `json:"descriptors,omitempty"`
	ServerState *ArtifactRef   `json:"server_state,omitempty"`
	Float32     bool           `json:"float32,omitempty"`
}

// SecAggSumGroup is a group's transcript, as stored: its public record,
// who shared keys, the masked inputs and the reveals, in spec order.
type SecAggSumGroup struct {
	Plan    SecAggGroupPlan `json:"plan"`
	Shared  []string        `json:"shared"`
	Masked  []SiteArtifact  `json:"masked"`
	Reveals []SiteArtifact  `json:"reveals"`
}

// SecAggSumOutput is AggregateOutput and each group's sum.
type SecAggSumOutput struct {
	AggregateOutput
	Sums []NamedArtifact `json:"sums"`
}

// RoundSecAgg is a round's secure aggregation in its manifest.
type RoundSecAgg struct {
	// Protocol is "secagg+".
	Protocol string `json:"protocol"`
	// Groups are the round's groups, in the order of their first member.
	Groups []SecAggGroupRecord `json:"groups"`
}

// SecAggGroupRecord is one group's run: its members, the sites among them
// that advertised keys (trained), shared keys, sent a masked input (the
// survivors, whose inputs the sum holds) and revealed shares; the members
// whose inputs the sum does not hold (dropped); the shares k and threshold
// t of each member's secrets; the quantisation; and the weight the server
// gave each survivor's update.
type SecAggGroupRecord struct {
	Name       string   `json:"name"`
	Members    []string `json:"members"`
	Advertised []string `json:"advertised"`
	Shared     []string `json:"shared"`
	Survivors  []string `json:"survivors"`
	Revealed   []string `json:"revealed"`
	Dropped    []string `json:"dropped"`
	// Shares, Threshold and the quantisation are absent when the round
	// failed before they were decided (SecAggPlan).
	Shares      int          `json:"shares,omitempty"`
	Threshold   int          `json:"threshold,omitempty"`
	Clip        float64      `json:"clip,omitempty"`
	QuantBits   int          `json:"quant_bits,omitempty"`
	ModulusBits int          `json:"modulus_bits,omitempty"`
	Weights     []SiteWeight `json:"weights"`
}

// The JSON documents of a secure aggregation's objects in S3, read by the
// sites, the server and verify.

// SecAggPublicDoc is a group's public record (artifact.RoundKeys.
// SecAggPublic): its run's Context and Config, its members (sorted) and
// the keys those that trained advertised.
type SecAggPublicDoc struct {
	Context secagg.Context               `json:"context"`
	Config  secagg.Config                `json:"config"`
	Members []string                     `json:"members"`
	Keys    map[string]secagg.PublicKeys `json:"keys"`
}

// Group returns the run the record describes.
func (d SecAggPublicDoc) Group() (*secagg.Group, error) {
	return secagg.NewGroup(d.Context, d.Members, d.Config)
}

// SecAggViewDoc is what the server sends a member (artifact.RoundKeys.
// SecAggView): its view of the group and the keys its neighbours
// advertised.
type SecAggViewDoc struct {
	View secagg.View                  `json:"view"`
	Keys map[string]secagg.PublicKeys `json:"keys"`
}

// SecAggSharesDoc is a member's second-stage message (artifact.RoundKeys.
// SecAggShares): its ciphertexts by recipient.
type SecAggSharesDoc struct {
	From string            `json:"from"`
	To   map[string][]byte `json:"to"`
}

// SecAggInboxDoc is what the server forwards a member (artifact.RoundKeys.
// SecAggInbox): its neighbours' ciphertexts to it, by sender.
type SecAggInboxDoc struct {
	To   string            `json:"to"`
	From map[string][]byte `json:"from"`
}

// SecAggSumVector is the vector name of a group's sum in its sum object
// (artifact.RoundKeys.SecAggSum, a store vector record of kind
// SecAggSumKind).
const (
	SecAggSumKind   = "secagg_sum"
	SecAggSumVector = "sum"
)

// UnmaskSum is a group's sum from its transcript (secagg.Group.
// AggregateInts over the public record, the members that shared keys,
// the senders of masked inputs read one at a time by load, and the
// reveals), dequantised (secagg.Dequantize) to real numbers. The server computes the sum with it, and verify recomputes it from what
// is stored.
func UnmaskSum(pub SecAggPublicDoc, shared, senders []string, load func(site string) ([]uint64, error), reveals []secagg.Reveal) ([]float64, error) {
	g, err := pub.Group()
	if err != nil {
		return nil, err
	}
	tr := secagg.Transcript{Public: pub.Keys, Shared: shared, Senders: senders, Load: load, Reveals: reveals}
	ints, err := g.AggregateInts(tr)
	if err != nil {
		return nil, err
	}
	cfg := g.Config()
	return secagg.Dequantize(ints, len(tr.Survivors()), cfg.Clip, cfg.QuantBits), nil
}
