// Package console is the campaign console of `starter console`: a
// read-only web application over one stack's campaigns and sweeps. It
// serves server-rendered HTML pages (the campaigns, a campaign, a sweep, a
// comparison) and the same data as JSON under /api/, built from what the
// round manifests in S3 record and what Temporal says of each workflow's
// state; nothing it serves starts, pauses or stops anything.
//
// Every asset (stylesheet, the small script that refreshes a running
// campaign's page, the favicon) is embedded in the binary and every chart
// is SVG drawn here on the server, so a page makes no request to any other
// host; the Content-Security-Policy it sends forbids it. It listens on a
// loopback address unless given a certificate and key, and then serves
// HTTPS to clients whose certificate the deployment's CA signed (Listen).
//
// It is not an editor or a control panel (use starter pause, resume, stop),
// and it shows nothing a manifest, a spec or a sweep's record does not
// already hold.
package console
