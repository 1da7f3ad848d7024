// Package method is the one vocabulary of a federated method's
// configuration: the method and preset names, every hyper-parameter
// (declared once, in Params, with its JSON name, meaning, default per
// preset, validation and sweep column), the resolution of a campaign's
// hyper-parameters into the core packages' settings (learn.SiteConfig,
// aggregation.Config, the descriptor options), and the site preparation
// and evaluation that the durable pipeline and the in-memory run share.
//
// It is pure: no Temporal, no S3, no files. The campaign spec (package
// pipeline), the activities, the in-memory run (package simulate) and the
// command line all read their settings from here, so adding a
// hyper-parameter is one edit in params.go.
package method
