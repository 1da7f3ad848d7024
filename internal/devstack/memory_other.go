//go:build !linux

package devstack

// releaseStartupPages does nothing where MADV_PAGEOUT does not exist.
func releaseStartupPages() {}
