package eval_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/eval"
)

// The privacy figures of paper §4.6 for three sites of a logistic model on
// 20 features (p = 21), sharing 48-number descriptors with α_c = 0.1.
func ExamplePrivacy() {
	r, err := eval.Privacy([]string{"a", "b", "c"}, []int{50, 100, 200}, eval.DefaultPrivacySettings(20))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range r.Sites {
		fmt.Printf("%s n=%3d  rho_grad=%.5f  rho_topo=%.5f\n", s.Site, s.N, s.GradientRisk, s.DescriptorRisk)
	}
	fmt.Printf("ratio %.4f, MI %.2f → %.2f bits\n", r.RiskRatio, r.GradientMI, r.DescriptorMI)
	// Output:
	// a n= 50  rho_grad=0.02100  rho_topo=0.00480
	// b n=100  rho_grad=0.01050  rho_topo=0.00240
	// c n=200  rho_grad=0.00525  rho_topo=0.00120
	// ratio 0.2286, MI 4.46 → 2.54 bits
}
