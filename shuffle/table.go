package shuffle

// Configuration is one (hand size, queue count) pair of a priority level.
type Configuration struct {
	HandSize int
	Queues   int
}

// seedConfigurations are the rows of the "Example Shuffle Sharding
// Configurations" table in the Kubernetes APF documentation (the v1.25
// concept page; docs/spec/shuffle-sharding.md#collision-table), in the
// documentation's order.
var seedConfigurations = [...]Configuration{
	{12, 32}, {10, 32}, {10, 64}, {9, 64}, {8, 64}, {8, 128},
	{7, 128}, {7, 256}, {6, 256}, {6, 512}, {6, 1024},
}

// seedElephants are the elephant counts of the documentation's table.
var seedElephants = [...]int{1, 4, 16}

// SeedConfigurations returns the eleven (hand size, queues) pairs of the
// documentation's collision table, in its order. The slice is a fresh copy.
func SeedConfigurations() []Configuration {
	return append([]Configuration(nil), seedConfigurations[:]...)
}

// SeedElephants returns the elephant counts of the documentation's table
// (1, 4 and 16). The slice is a fresh copy.
func SeedElephants() []int {
	return append([]int(nil), seedElephants[:]...)
}

// TableRow is one row of a collision table: for a priority level with
// Queues queues and hands of HandSize, Probabilities[i] is the chance that
// a mouse is squished by Elephants[i] elephants (see collisionProbability).
type TableRow struct {
	HandSize      int
	Queues        int
	Elephants     []int
	Probabilities []float64
}

// Row computes the table row for one configuration and a list of elephant
// counts. Elephants is copied into the row.
func Row(handSize, queues int, elephants []int) (TableRow, error) {
	row := TableRow{
		HandSize:      handSize,
		Queues:        queues,
		Elephants:     append([]int(nil), elephants...),
		Probabilities: make([]float64, len(elephants)),
	}
	for i, e := range elephants {
		p, err := collisionProbability(handSize, queues, e)
		if err != nil {
			return TableRow{}, err
		}
		row.Probabilities[i] = p
	}
	return row, nil
}
