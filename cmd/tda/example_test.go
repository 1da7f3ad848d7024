package main

import (
	"fmt"
	"os"
)

func Example() {
	// The unit square: three H0 bars [0,1), the infinite H0 bar and the H1
	// bar [1, √2) of its one loop.
	code := run([]string{"diagram", "../../testdata/ph/square_d2_n4.csv"}, os.Stdout, os.Stderr)
	fmt.Println("exit", code)
	// Output:
	// 0 0.0 1.0
	// 0 0.0 1.0
	// 0 0.0 1.0
	// 0 0.0 inf
	// 1 1.0 1.4142135623730951
	// exit 0
}
