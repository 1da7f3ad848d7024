package workers

import (
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
