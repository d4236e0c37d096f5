package shuffle_test

import (
	"fmt"

	"github.com/apfproject/apf/shuffle"
)

func ExampleDealer_DealIntoHand() {
	d, err := shuffle.NewDealer(64, 8) // the default queues and hand size
	if err != nil {
		panic(err)
	}
	hand := make([]int, 0, d.HandSize()) // reused across calls: no allocation
	hand = d.DealIntoHand(17644606172554983095, hand)
	fmt.Println(hand)
	// Output: [55 56 51 36 11 5 38 52]
}

func ExampleNewDealer_entropy() {
	_, err := shuffle.NewDealer(64, 11)
	fmt.Println(err)
	// Output: shuffle: deck size 64 with hand size 11 needs 66 bits of hash, more than the 60 available
}

// The chance that a mouse flow shares every queue of its hand with one of E
// elephant flows, at hand size 8 and 64 queues (the defaults).
func ExampleRow() {
	row, err := shuffle.Row(8, 64, shuffle.SeedElephants())
	if err != nil {
		panic(err)
	}
	for i, e := range row.Elephants {
		fmt.Printf("E=%-2d %g\n", e, row.Probabilities[i])
	}
	// Output:
	// E=1  2.25929199850899e-10
	// E=4  0.0004886697053040446
	// E=16 0.35935114681123076
}
