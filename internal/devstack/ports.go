package devstack

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// FreePortRun finds n consecutive free TCP ports on 127.0.0.1 and returns
// the first. The embedded Temporal server takes its frontend port and the
// three after it, so a fixed-port stack (one that must come back on the
// same ports after a restart) needs a run of four. A port found free can
// still be taken by another process before it is bound; callers that start
// a stack on it retry or fail with the bind error.
func FreePortRun(n int) (int, error) {
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if base+n > 65535 {
			continue
		}
		ok := true
		for p := base + 1; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no run of free ports found on 127.0.0.1")
}
