package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
)

// Seed purposes passed to DeriveSeed.
const (
	PurposeDescriptor = "descriptor" // descriptor subsample
	PurposeTrain      = "train"      // local training (initialisation, batches)
	PurposeCluster    = "cluster"    // clustering ties and initialisation
	PurposeAggregate  = "aggregate"  // randomised aggregation rules
	// PurposeValidation draws the training rows a site holds out for
	// validation (method.ValidationRows; round 0: the same rows every round).
	PurposeValidation = "validation"
)

// DeriveSeed returns the seed of one random choice of a campaign, so that
// every such choice is reproducible and independent of scheduling order.
//
// The seed is the first 8 bytes, read big-endian, of
//
//	SHA-256( "ptopofl/seed/v1" 0x00
//	         || uint64be(campaignSeed)
//	         || int64be(round)
//	         || uint32be(len(site))    || site
//	         || uint32be(len(purpose)) || purpose )
//
// Lengths prefix the strings so that no two (site, purpose) pairs share an
// encoding. Server-side choices use site "". Changing this encoding changes
// every result: bump "v1" if it ever must change.
func DeriveSeed(campaignSeed uint64, round int, site string, purpose string) uint64 {
	const domain = "ptopofl/seed/v1\x00"
	buf := make([]byte, 0, len(domain)+8+8+4+len(site)+4+len(purpose))
	buf = append(buf, domain...)
	buf = binary.BigEndian.AppendUint64(buf, campaignSeed)
	buf = binary.BigEndian.AppendUint64(buf, uint64(int64(round)))
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(site)))
	buf = append(buf, site...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(purpose)))
	buf = append(buf, purpose...)
	sum := sha256.Sum256(buf)
	return binary.BigEndian.Uint64(sum[:8])
}
