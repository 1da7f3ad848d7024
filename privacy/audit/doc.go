// Package audit measures what a site's releases leak about one of its
// records, by attacking them, and checks the differential-privacy
// guarantee of the releases against the accountant's claim. It follows
// ../../../shared/research/privacy.md §5.
//
// Four experiments, each a pure function of its configuration and seed:
//
//   - Reconstruct inverts a one-record site's logistic update (Zhu, Liu,
//     Han, "Deep leakage from gradients", NeurIPS 2019; Zhao, Mopuri,
//     Bilen, "iDLG", 2020): without DP the record comes back to float
//     precision, under DP it is lost in the noise.
//   - LiRA is the online likelihood-ratio membership-inference attack of
//     Carlini, Chien, Nasr, Song, Terzis and Tramèr ("Membership inference
//     attacks from first principles", IEEE S&P 2022), generic over how a
//     model is trained and scored; TabularSite and DeepSite adapt it to a
//     site's logistic model (learn) and to the deep-small CNN (nn), plain
//     or under DP.
//   - DescriptorMembership is the distinguishing test of §5(b) against the
//     paper's topological descriptor and the DP descriptor (tda).
//   - AuditDPGD audits DP gradient descent (learn.DPGradientDescent with
//     privacy/noise's Gaussian mechanism) with a gradient canary that the
//     auditor sees at every step (Jagielski, Ullman, Oprea 2020; Nasr,
//     Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis 2023), and
//     compares its empirical lower bound on ε with the accountant's ε
//     (package privacy).
//
// ClopperPearson, EpsilonLowerBound and TPRAtFPR are the statistics the
// experiments share.
//
// Every random draw is seeded: DP noise and the sites' secret subsamples
// come from privacy/noise streams of a site secret (a fixed one derived
// from the seed when the caller gives none), drawn exactly as a site draws
// them; everything else (initial models, memberships, canaries) comes from
// math/rand/v2 PCG generators. Work split across goroutines writes each
// result to its own slot, so the results do not depend on the number of
// workers.
//
// The package is pure computation: no files, no Temporal, no S3. It is not
// a privacy accountant (package privacy is) and it proves nothing: an
// attack that fails shows only that this attack fails, while an audit
// whose lower bound exceeds the accountant's ε shows a bug.
package audit
