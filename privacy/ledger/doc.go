// Package ledger is a site's privacy ledger: every differentially private
// release the site has made from each of its data files, across every
// campaign, sweep and experiment, and the ε they compose to — what a
// site's operator limits with a lifetime budget and its privacy officer
// signs. It follows block composition (Lécuyer et al., "Privacy
// Accounting and Quality Control in the Sage Differentially Private ML
// Platform", SOSP 2019: one budget per block of data across every model
// trained on it) with the data's SHA-256 as the block, and OpenDP's
// odometer and filter: Summary reads the odometer, Check is the filter that
// refuses a release beyond the budget.
//
// A Release names what was released (campaign, attempt, round, purpose),
// from which data (the digest of the split's file, so a renamed copy is
// the same data) and by which mechanism with which parameters; its ID is
// the site's name for the release's noise (noise.Secret.ReleaseID), so a
// retried activity, which releases the very same bytes, is recognised and
// costs nothing. The releases of one data file compose by the campaign
// accountant's rules (package privacy: exact Gaussian DP when every
// release reads every record, Rényi DP for Poisson-subsampled ones); a
// site's ε is the largest over its files, since a record is in one file
// only (parallel composition).
//
// Entry is one line of the ledger's file (JSON, one object a line, the
// file append-only), Parse reads a file's bytes and Ledger.Apply replays
// its entries. The package is pure: it reads and writes no file (package
// siteledger keeps the file durable), knows nothing of Temporal, S3 or
// the site's data beyond digests.
package ledger
