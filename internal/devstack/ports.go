package devstack

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePortRun finds n consecutive free TCP ports on 127.0.0.1 and returns
// the first. The embedded Temporal server takes its frontend port and the
// three after it, so a fixed-port stack (one that must come back on the
// same ports after a restart) needs a run of four.
//
// The run is drawn below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), from which every outgoing
// connection of every process takes its local port: a port found free
// there was often taken by a connection before the stack bound it, or
// before the stack came back on it after a restart (seen with two hundred
// in-process site workers connecting to Temporal and S3). Below the range
// only a listener asking for that very port can take it. A port found free
// can still be taken by such a listener before it is bound; callers that
// start a stack on it fail with the bind error.
func FreePortRun(n int) (int, error) {
	if n < 1 {
		return 0, fmt.Errorf("find a free port run: n = %d, want >= 1", n)
	}
	lo, hi := 10000, ephemeralLow()-n
	for range 500 {
		base := 0
		if hi > lo {
			base = lo + rand.IntN(hi-lo)
		} else { // no room below the ephemeral range: ask the kernel
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return 0, fmt.Errorf("find a free port: %w", err)
			}
			base = l.Addr().(*net.TCPAddr).Port
			l.Close()
			if base+n > 65536 {
				continue
			}
		}
		if runFree(base, n) {
			return base, nil
		}
	}
	return 0, errors.New("no run of free ports found on 127.0.0.1")
}

// runFree reports whether ports base … base+n−1 of 127.0.0.1 can all be
// listened on now.
func runFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range, or
// 32768 (Linux's default) when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if p, err := strconv.Atoi(f[0]); err == nil && p > 1024 {
				return p
			}
		}
	}
	return 32768
}
