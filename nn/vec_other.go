//go:build !amd64

package nn

// addVec adds src to dst elementwise.
func addVec(dst, src []float32) { addVecGo(dst, src) }
