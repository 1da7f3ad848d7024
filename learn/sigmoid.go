package learn

import "math"

// LogitClip is the bound the reference applies to a logit before the
// sigmoid when it scores a sample or takes a gradient-descent step: scores
// are σ(clip(x·w+b, −30, 30)).
const LogitClip = 30.0

// Sigmoid returns the logistic function 1/(1+e^{−z}) of z clipped to
// [−LogitClip, LogitClip]. This is the score of the reference's evaluation
// and of its gradient-descent baselines; the clip keeps e^{−z} finite and the
// score strictly inside (0, 1).
func Sigmoid(z float64) float64 {
	if z > LogitClip {
		z = LogitClip
	} else if z < -LogitClip {
		z = -LogitClip
	}
	return 1 / (1 + math.Exp(-z))
}

// ExactSigmoid returns 1/(1+e^{−z}) without clipping, evaluated so that
// neither branch overflows. The L-BFGS objective uses it: clipping there
// would make the loss flat far from the data and change the optimum.
func ExactSigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// softplus returns log(1+e^z) without overflow or loss of precision for
// large |z|.
func softplus(z float64) float64 {
	if z > 0 {
		return z + math.Log1p(math.Exp(-z))
	}
	return math.Log1p(math.Exp(z))
}

// LogLoss returns the binary cross-entropy −y·log σ(z) − (1−y)·log(1−σ(z))
// of a label y ∈ {0, 1} and a logit z, written as softplus(z) − y·z so that
// it stays finite and accurate for any finite z.
func LogLoss(y, z float64) float64 {
	return softplus(z) - y*z
}

// lossAndSigmoid returns LogLoss(y, z) and ExactSigmoid(z) from one
// exponential: both need e^{−|z|} (softplus's e^{−z} for z > 0 and e^{z}
// otherwise, the sigmoid's likewise, and e^{−0} = e^{0}), so the values are
// bit for bit those of the two functions. The L-BFGS objective calls it once
// per sample and evaluation; the exponential was a third of its time.
func lossAndSigmoid(y, z float64) (loss, sigmoid float64) {
	e := math.Exp(-math.Abs(z))
	sp := math.Log1p(e)
	if z > 0 {
		sp = z + sp
	}
	if z >= 0 {
		sigmoid = 1 / (1 + e)
	} else {
		sigmoid = e / (1 + e)
	}
	return sp - y*z, sigmoid
}
