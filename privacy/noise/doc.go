// Package noise is where a site's differential-privacy randomness comes
// from: a site secret that never leaves the site, keyed streams derived
// from it for each release, and the Gaussian mechanism in a form whose
// floating-point output does not leak the value it protects.
//
// A release is named by a Key (campaign, attempt, round, site, purpose and
// a digest of the activity's input). Secret.Stream derives a ChaCha8
// stream (Go's math/rand/v2, a cryptographically strong generator) from
// HMAC-SHA256(secret, key), so:
//
//   - a retried activity, which has the same key and the same input,
//     draws the very same noise and releases the very same bytes: it
//     releases nothing new and costs nothing more;
//   - the server, which knows every key but not the secret, can predict
//     neither the noise nor a subsample drawn from the stream;
//   - two releases with different inputs never share noise, so their
//     difference is never noise-free.
//
// What the package is not: it knows nothing of accounting (package
// privacy composes the releases), of Temporal, S3 or site data. Apart from
// LoadOrCreateSecret, which reads and writes the secret's file, it touches
// no files.
package noise
