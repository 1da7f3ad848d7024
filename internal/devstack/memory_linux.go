package devstack

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages hands the pages of the executable's read-only
// mappings (its code and constant data) back to the kernel
// (madvise MADV_PAGEOUT), once the stack has started. The binary that
// runs the stack is large (the Temporal server, its Web UI, the S3
// gateway and everything they link: about 290 MB), and starting it runs
// the initialisers of a thousand packages scattered over it: before any
// campaign starts, about 150 MB of it are resident, most of which nothing
// touches again. The pages stay in the page cache; what the process uses
// afterwards comes back at its next touch (a minor fault), so its resident
// set holds what it runs. Errors are ignored: this only saves memory.
func releaseStartupPages() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			continue
		}
		// The raw call: the range is a mapping of the executable, not Go
		// memory, so it takes addresses, not a slice.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(a), uintptr(b-a), unix.MADV_PAGEOUT)
	}
}
