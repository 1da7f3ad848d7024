package pipeline_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

// ExampleCampaignSpec_Validate shows that a bad campaign is rejected before
// anything starts, with an error naming the offending field.
func ExampleCampaignSpec_Validate() {
	spec := pipeline.CampaignSpec{
		Campaign: "demo",
		Method:   learn.PTopoFL,
		Rounds:   15,
		Sites:    []pipeline.Site{{Name: "hospital-a"}, {Name: "hospital-b"}},
		Bucket:   "ptopofl",
	}.WithDefaults()
	fmt.Println(spec.Validate())

	spec.Hyperparameters.Beta = 1.5
	fmt.Println(spec.Validate())
	// Output:
	// <nil>
	// hyperparameters.beta = 1.5: must be in [0, 1]
}

// ExampleDeriveSeed shows that every random choice has its own seed,
// derived from the campaign seed, the round, the site and the purpose, so a
// retried activity draws exactly what the first attempt drew.
func ExampleDeriveSeed() {
	a := pipeline.DeriveSeed(42, 1, "hospital-a", pipeline.PurposeDescriptor)
	b := pipeline.DeriveSeed(42, 1, "hospital-a", pipeline.PurposeDescriptor)
	c := pipeline.DeriveSeed(42, 1, "hospital-b", pipeline.PurposeDescriptor)
	fmt.Println(a == b, a == c)
	// Output:
	// true false
}
