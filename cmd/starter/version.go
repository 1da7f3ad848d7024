package main

import "runtime/debug"

// codeVersion is the VCS revision the binary was built from (with
// "+dirty" for a modified tree), recorded in every manifest.
func codeVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return info.Main.Version
	}
	return rev + dirty
}
