package workers

import (
	"debug/elf"
	"os"
	"runtime/debug"
	"sync"

	"go.temporal.io/sdk/worker"
)

// CodeVersion is the VCS revision the running binary was built from, with
// "+dirty" for a modified tree, or else the main module's version; "" when
// the binary carries no build information. Every manifest records it.
func CodeVersion() string {
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

var binaryChecksumOnce sync.Once

// nameBinary gives the Temporal SDK the binary's identity (the "binary
// checksum" it records with each workflow's reset points) from the Go
// build ID in the executable's ELF notes, which the toolchain derives from
// the binary's inputs and content. Otherwise the SDK hashes the whole
// executable when the first worker starts: with the embedded Temporal
// server linked in, ~200 MB read and hashed by every `starter` and
// `worker` process, about a third of a second of CPU before any work. A
// binary without the note (not ELF, stripped) keeps the SDK's hash.
func nameBinary() {
	binaryChecksumOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		if id := goBuildID(exe); id != "" {
			worker.SetBinaryChecksum("go-build-id:" + id)
		}
	})
}

// goBuildID returns the Go build ID of the executable at path (what `go
// tool buildid` prints), or "" if it has none.
func goBuildID(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil {
		return ""
	}
	b, err := sec.Data()
	if err != nil || len(b) < 16 {
		return ""
	}
	// An ELF note: name size, descriptor size, type (4 bytes each, in the
	// file's byte order), the name "Go\x00\x00", then the descriptor.
	nameSize := f.ByteOrder.Uint32(b[0:4])
	descSize := f.ByteOrder.Uint32(b[4:8])
	if nameSize != 4 || string(b[12:16]) != "Go\x00\x00" || uint64(len(b)) < 16+uint64(descSize) {
		return ""
	}
	return string(b[16 : 16+descSize])
}
