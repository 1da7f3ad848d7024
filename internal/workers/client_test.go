package workers

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
)

func TestCompression(t *testing.T) {
	cases := []struct {
		hostPort string
		none     bool
	}{
		0: {"127.0.0.1:7233", true},
		1: {"127.1.2.3:7233", true},
		2: {"[::1]:7233", true},
		3: {"localhost:7233", true},
		4: {"temporal.example.org:7233", false},
		5: {"10.0.0.5:7233", false},
		6: {"[2001:db8::1]:7233", false},
		7: {"no-port", false},
	}
	for i, c := range cases {
		_, none := Compression(c.hostPort).(*client.GrpcCompressionNone)
		if none != c.none {
			t.Errorf("case %d: Compression(%q) none = %v, want %v", i, c.hostPort, none, c.none)
		}
	}
}

// TestGoBuildID: the build ID read from the test binary's ELF note is the
// one `go tool buildid` prints for it.
func TestGoBuildID(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	got := goBuildID(exe)
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid: %v", err)
	}
	if want := strings.TrimSpace(string(out)); got != want {
		t.Errorf("goBuildID = %q, go tool buildid says %q", got, want)
	}
	if goBuildID("compression_test.go") != "" {
		t.Error("a file that is not ELF has a build ID")
	}
}
