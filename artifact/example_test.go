package artifact_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/artifact"
)

// ExampleDescriptorKey shows the layout of a campaign's keys (DESIGN §4).
func ExampleDescriptorKey() {
	fmt.Println(artifact.DescriptorKey("heart-2025", 7, "hospital-a"))
	fmt.Println(artifact.ManifestKey("heart-2025", 7))
	// Output:
	// campaigns/heart-2025/round-0007/descriptors/hospital-a.parquet
	// campaigns/heart-2025/round-0007/manifest.json
}

// ExampleValidateName shows the one name rule, checked where a name enters.
func ExampleValidateName() {
	fmt.Println(artifact.ValidateName("hospital-a"))
	fmt.Println(fmt.Errorf("sites[0].name %w", artifact.ValidateName("../etc")))
	// Output:
	// <nil>
	// sites[0].name "../etc": must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit
}
