// Package secagg is the SecAgg+ secure-aggregation protocol (Bell, Bonawitz,
// Gascón, Lepoint, Raykova, "Secure Single-Server Aggregation with
// (Poly)Logarithmic Overhead", CCS 2020), built on SecAgg (Bonawitz et al.,
// "Practical Secure Aggregation for Privacy-Preserving Machine Learning",
// CCS 2017): a group of members each hold a vector, and a server learns the
// sum of the vectors of the members that stay to the end, and nothing else
// about any one of them.
//
// One run of the protocol is one Group (a set of members, a public Context
// that binds every key and ciphertext to one campaign, attempt, round and
// aggregation group, and a Config). The server holds the Group; each
// member holds only its View of it (Group.View: the Context, the Config
// and its O(log n) neighbours with their indices) and makes its Member
// from it (View.Member). Its four stages are:
//
//  1. Advertise keys: each member derives, from a 32-byte seed only it holds
//     (the site secret's stream for this Context), two X25519 key pairs — one
//     to encrypt shares to its neighbours, one whose Diffie–Hellman agreement
//     with each neighbour keys their pairwise mask — and a self-mask secret;
//     it publishes the two public keys and a commitment to the self-mask
//     secret (Member.PublicKeys, or AdvertisedKeys before the group is
//     formed: the keys depend on the seed, the Context and the name only).
//  2. Share keys: each member Shamir-shares its self-mask secret and the
//     secret its mask key is derived from among its neighbours (threshold t),
//     and encrypts each neighbour's pair of shares with AES-256-GCM under a
//     key agreed with that neighbour (Member.ShareKeys).
//  3. Masked input: each member clips and quantises its vector to integers
//     modulo 2ᵐ (Member.MaskInput; or gives integers it computed itself,
//     Member.MaskInts), adds its self mask and, for every neighbour that
//     shared keys, the pairwise mask with a sign that makes each pair cancel
//     in the sum.
//  4. Unmask: the server tells each member which of its neighbours sent a
//     masked input (survivors) and which shared keys but did not (dropped);
//     the member reveals its share of each survivor's self-mask secret and of
//     each dropped neighbour's mask secret, never both for one neighbour
//     (Member.Unmask). The server reconstructs the survivors' self masks and
//     the dropped members' pairwise masks, removes them and dequantises the
//     sum (Group.Aggregate; Group.AggregateInts for integer inputs, whose
//     sum Signed reads). The Transcript may stream the masked inputs (Load),
//     so a server holds one model-sized vector at a time.
//
// The neighbour graph is SecAgg+'s: the members are placed on a ring in an
// order drawn from the Context (public, so the server and every member agree
// on it) and each is joined to the (k−1)/2 members on either side, so a
// member does O(k) work and keeps O(k) state whatever the group's size;
// DefaultShares takes k = 2⌈log₂ n⌉ + 1 as the paper's logarithmic degree.
// Every key derivation is deterministic in the member's seed and the
// Context: a stage run again (a retried activity) sends the same bytes.
//
// Quantisation (Config.Clip c, Config.QuantBits b, Config.ModulusBits m):
// each coordinate is clipped to [−c, c], mapped to [0, 2ᵇ − 1] and rounded
// stochastically (unbiased) with a stream from the member's seed; n
// members' sums fit the modulus while n·(2ᵇ − 1) < 2ᵐ, which NewGroup
// checks. The defaults are Flower's SecAggPlusWorkflow's: clipping range
// 8, quantisation range 2²², modulus 2³²; m = 64 serves integer inputs
// whose sums need more room (a distributed-noise release on a fine grid).
// One member's rounding error is at most 2c/(2ᵇ − 1) ≈ 3.8·10⁻⁶ per
// coordinate at the defaults, zero in the mean. Masked inputs travel as
// EncodeMasked's bytes.
//
// Threat model: an honest-but-curious server that follows the protocol and
// sees every message (everything a member sends is stored), colluding with
// fewer than t members of a group, learns the sum of the surviving members'
// quantised vectors and nothing more of any one member: a survivor's vector
// stays hidden by the pairwise masks shared with its surviving neighbours,
// whose mask secrets are never revealed; a dropped member's vector never
// reaches the server. Group.Aggregate refuses a survivor set whose neighbour
// graph falls apart (a part of it would be unmasked alone). The package does
// not defend against a server that lies about who survived to different
// members (SecAgg's consistency round); a member's caller that keeps what
// it revealed per Context closes that (the site refuses a second, different
// unmask request). Primitives are Go's crypto/ecdh (X25519), crypto/hkdf
// (HKDF-SHA256), crypto/aes with crypto/cipher (AES-256-GCM, AES-256-CTR as
// the mask generator) and cloudflare/circl's secretsharing (Shamir over the
// scalar field of P-256); this package writes only the protocol.
package secagg
