package noise

import "testing"

// BenchmarkGaussian32 times the Gaussian mechanism on a ConvNet-2-sized
// float32 gradient sum (6,603,710 numbers) and a deep-small CNN's (28,938).
func BenchmarkGaussian32(b *testing.B) {
	s, _ := SecretFromBytes(make([]byte, SecretSize))
	for _, n := range []int{28938, 6603710} {
		v := make([]float32, n)
		b.Run(itoa(n), func(b *testing.B) {
			st := s.Stream(Key{Purpose: "bench"})
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				st.Gaussian32(v, 1, 1)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
