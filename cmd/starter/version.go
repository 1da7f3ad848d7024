package main

import "github.com/ptopofl/ptopofl/internal/workers"

// codeVersion is the VCS revision the binary was built from (with
// "+dirty" for a modified tree), recorded in every manifest.
func codeVersion() string { return workers.CodeVersion() }
