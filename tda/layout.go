package tda

// The layout of the DescriptorLen numbers of a descriptor's Vector: two
// Betti curves of BettiSteps values each, then one scalar summary per
// homology dimension, H0 before H1 (see ComputeDescriptor, step 6). Code
// outside tda indexes a descriptor only through these names.
const (
	// BettiSteps is the Betti-curve resolution L of the paper (Table 3: 20).
	BettiSteps = bettiSteps
	// BettiH0 and BettiH1 are the first indices of the H0 and H1 Betti
	// curves.
	BettiH0 = 0
	BettiH1 = BettiH0 + BettiSteps
	// EntropyH0 and EntropyH1 index the persistence entropies.
	EntropyH0 = BettiH1 + BettiSteps
	EntropyH1 = EntropyH0 + 1
	// AmplitudeH0 and AmplitudeH1 index the amplitudes sqrt(Σ pers²);
	// AmplitudeH0 is pTopoFL's sample-weight bandwidth.
	AmplitudeH0 = EntropyH1 + 1
	AmplitudeH1 = AmplitudeH0 + 1
	// PersistentH0 and PersistentH1 index the number of pairs whose
	// persistence is above the median.
	PersistentH0 = AmplitudeH1 + 1
	PersistentH1 = PersistentH0 + 1
	// CountH0 and CountH1 index the numbers of pairs.
	CountH0 = PersistentH1 + 1
	CountH1 = CountH0 + 1
)

// descriptorLayoutEnd checks at compile time that the layout fills exactly
// DescriptorLen numbers.
var _ = [1]struct{}{}[CountH1+1-DescriptorLen]
