package audit

import (
	"errors"
	"testing"

	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// testSecret is the fixed site secret the tests draw DP noise from, as a
// site draws it from its own.
func testSecret(t testing.TB) noise.Secret {
	t.Helper()
	b := make([]byte, noise.SecretSize)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	s, err := noise.SecretFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// healthcareSite returns the train and test rows and labels of one
// honest healthcare site of 250 rows (200 train, 50 test; raw features,
// 20 of them), from eval.Healthcare with the given seed.
func healthcareSite(t testing.TB, seed uint64) (x [][]float64, y []float64, test [][]float64) {
	t.Helper()
	o := eval.DefaultHealthcareOptions(seed)
	o.Sites, o.MinSize, o.MaxSize, o.Adversarial = 1, 250, 251, nil
	f, err := eval.Healthcare(o)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Sites[0]
	y = make([]float64, len(s.YTrain))
	for i, v := range s.YTrain {
		y[i] = float64(v)
	}
	return s.XTrain, y, s.XTest
}

// errTest is the error of a training that fails.
var errTest = errors.New("training failed")
