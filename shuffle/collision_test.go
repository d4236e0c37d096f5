package shuffle

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// seedTable is the "Example Shuffle Sharding Configurations" table of the
// Kubernetes APF documentation (the v1.25 concept page; reproduced in
// docs/spec/shuffle-sharding.md#collision-table): hand size, queues, then the
// probability for 1, 4 and 16 elephants.
var seedTable = []struct {
	hand, queues int
	p            [3]float64
}{
	{12, 32, [3]float64{4.428838398950118e-09, 0.11431348830099144, 0.9935089607656024}},
	{10, 32, [3]float64{1.550093439632541e-08, 0.0626479840223545, 0.9753101519027554}},
	{10, 64, [3]float64{6.601827268370426e-12, 0.00045571320990370776, 0.49999929150089345}},
	{9, 64, [3]float64{3.6310049976037345e-11, 0.00045501212304112273, 0.4282314876454858}},
	{8, 64, [3]float64{2.25929199850899e-10, 0.0004886697053040446, 0.35935114681123076}},
	{8, 128, [3]float64{6.994461389026097e-13, 3.4055790161620863e-06, 0.02746173137155063}},
	{7, 128, [3]float64{1.0579122850901972e-11, 6.960839379258192e-06, 0.02406157386340147}},
	{7, 256, [3]float64{7.597695465552631e-14, 6.728547142019406e-08, 0.0006709661542533682}},
	{6, 256, [3]float64{2.7134626662687968e-12, 2.9516464018476436e-07, 0.0008895654642000348}},
	{6, 512, [3]float64{4.116062922897309e-14, 4.982983350480894e-09, 2.26025764343413e-05}},
	{6, 1024, [3]float64{6.337324016514285e-16, 8.09060164312957e-11, 4.517408062903668e-07}},
}

const relTol = 1e-12

func relDiff(got, want float64) float64 {
	return math.Abs(got-want) / math.Abs(want)
}

func TestCollisionSeedTable(t *testing.T) {
	elephants := [3]int{1, 4, 16}
	n := 0
	for _, row := range seedTable {
		for i, e := range elephants {
			got, err := collisionProbability(row.hand, row.queues, e)
			if err != nil {
				t.Fatalf("H=%d N=%d E=%d: %v", row.hand, row.queues, e, err)
			}
			if d := relDiff(got, row.p[i]); !(d <= relTol) {
				t.Errorf("H=%d N=%d E=%d: got %v, want %v (relative difference %.3g)",
					row.hand, row.queues, e, got, row.p[i], d)
			}
			n++
		}
	}
	if n != 33 {
		t.Fatalf("checked %d values, want 33", n)
	}
}

// The table computed through Table must match the seed too, row for row.
func TestSeedTableViaTable(t *testing.T) {
	rows, err := table(SeedConfigurations(), SeedElephants())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(seedTable) {
		t.Fatalf("got %d rows, want %d", len(rows), len(seedTable))
	}
	for i, row := range rows {
		want := seedTable[i]
		if row.HandSize != want.hand || row.Queues != want.queues {
			t.Errorf("row %d is H=%d N=%d, want H=%d N=%d", i, row.HandSize, row.Queues, want.hand, want.queues)
		}
		for j, p := range row.Probabilities {
			if d := relDiff(p, want.p[j]); !(d <= relTol) {
				t.Errorf("row %d E=%d: got %v, want %v", i, row.Elephants[j], p, want.p[j])
			}
		}
	}
}

// markovCollision is the formulation of
// docs/spec/shuffle-sharding.md#collision-probability, kept as an independent
// reference: the distribution of the size U of the union of the elephants'
// hands, evolved one elephant at a time with
// P(U' = u+k | U = u) = C(u,H-k)·C(N-u,k)/C(N,H), then the chance
// C(U,H)/C(N,H) that the mouse's hand falls inside that union. After e
// steps every probability has denominator C(N,H)^e, so only the
// numerators are carried.
func markovCollision(h, n, e int) *big.Rat {
	choose := func(a, b int) *big.Int {
		if b < 0 || b > a {
			return new(big.Int)
		}
		return new(big.Int).Binomial(int64(a), int64(b))
	}
	dist := make([]*big.Int, n+1) // dist[u] = P(U = u) · C(N,H)^step
	for u := range dist {
		dist[u] = new(big.Int)
	}
	dist[0].SetInt64(1)
	var ways big.Int
	for range e {
		next := make([]*big.Int, n+1)
		for u := range next {
			next[u] = new(big.Int)
		}
		for u, pu := range dist {
			if pu.Sign() == 0 {
				continue
			}
			for k := 0; k <= h && u+k <= n; k++ {
				ways.Mul(choose(u, h-k), choose(n-u, k))
				next[u+k].Add(next[u+k], ways.Mul(&ways, pu))
			}
		}
		dist = next
	}
	num := new(big.Int)
	for u, pu := range dist {
		num.Add(num, ways.Mul(pu, choose(u, h)))
	}
	den := new(big.Int).Exp(choose(n, h), big.NewInt(int64(e+1)), nil)
	return new(big.Rat).SetFrac(num, den)
}

// The inclusion–exclusion form must equal the Markov-chain form of the
// specification notes exactly, on every small configuration and on the seed
// configurations.
func TestCollisionMatchesMarkovChain(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for h := 1; h <= n; h++ {
			for e := 0; e <= 6; e++ {
				got, err := collisionProbabilityRat(h, n, e)
				if err != nil {
					t.Fatal(err)
				}
				if want := markovCollision(h, n, e); got.Cmp(want) != 0 {
					t.Errorf("H=%d N=%d E=%d: inclusion–exclusion %v, Markov chain %v", h, n, e, got, want)
				}
			}
		}
	}
	if testing.Short() {
		return
	}
	for _, c := range SeedConfigurations() {
		for _, e := range []int{1, 4, 16} {
			got, _ := collisionProbabilityRat(c.HandSize, c.Queues, e)
			if want := markovCollision(c.HandSize, c.Queues, e); got.Cmp(want) != 0 {
				t.Errorf("H=%d N=%d E=%d: inclusion–exclusion and Markov chain differ", c.HandSize, c.Queues, e)
			}
		}
	}
}

func TestCollisionClosedForms(t *testing.T) {
	for _, c := range []Configuration{{1, 1}, {3, 10}, {8, 64}, {6, 1024}, {15, 1 << 20}} {
		// One elephant squishes the mouse only by holding the same hand.
		got, err := collisionProbabilityRat(c.HandSize, c.Queues, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Binomial(int64(c.Queues), int64(c.HandSize)))
		if got.Cmp(want) != 0 {
			t.Errorf("H=%d N=%d E=1: got %v, want 1/C(N,H) = %v", c.HandSize, c.Queues, got, want)
		}
		// No elephants, no squishing.
		if p, _ := collisionProbability(c.HandSize, c.Queues, 0); p != 0 {
			t.Errorf("H=%d N=%d E=0: got %v, want 0", c.HandSize, c.Queues, p)
		}
	}
	// A hand that is the whole deck is always covered by any elephant.
	for _, n := range []int{1, 2, 7, 40} {
		if p, _ := collisionProbability(n, n, 3); p != 1 {
			t.Errorf("H=N=%d E=3: got %v, want 1", n, p)
		}
	}
}

// Probabilities rise with the number of elephants and fall with the number
// of queues.
func TestCollisionMonotone(t *testing.T) {
	for _, h := range []int{1, 4, 8} {
		prevN := 2.0
		for _, n := range []int{16, 32, 64, 128} {
			prevE := -1.0
			for e := 0; e <= 20; e++ {
				p, err := collisionProbability(h, n, e)
				if err != nil {
					t.Fatal(err)
				}
				if p < 0 || p > 1 || p < prevE {
					t.Fatalf("H=%d N=%d E=%d: %v after %v", h, n, e, p, prevE)
				}
				prevE = p
			}
			if prevE > prevN {
				t.Fatalf("H=%d N=%d E=20: %v is above %v for fewer queues", h, n, prevE, prevN)
			}
			prevN = prevE
		}
	}
}

// Deal real hands with the Dealer from random hashes and count how often
// the mouse is squished: the frequency must agree with the formula, which
// ties the formula's model to the dealer's actual behaviour.
func TestCollisionMonteCarlo(t *testing.T) {
	const n, h, e, trials = 10, 3, 4, 200000
	d := mustDealer(t, n, h)
	rng := rand.New(rand.NewPCG(7, 11))
	hand := make([]int, 0, h)
	squished := 0
	for range trials {
		var held [n]bool
		for range e {
			for _, c := range d.DealIntoHand(rng.Uint64(), hand) {
				held[c] = true
			}
		}
		all := true
		for _, c := range d.DealIntoHand(rng.Uint64(), hand) {
			all = all && held[c]
		}
		if all {
			squished++
		}
	}
	p, _ := collisionProbability(h, n, e)
	freq := float64(squished) / trials
	sigma := math.Sqrt(p * (1 - p) / trials)
	if math.Abs(freq-p) > 5*sigma {
		t.Errorf("simulated %v, formula %v (5σ = %v)", freq, p, 5*sigma)
	}
}

func TestCollisionArgumentErrors(t *testing.T) {
	for _, c := range [][3]int{
		{0, 10, 1}, {-1, 10, 1}, {11, 10, 1}, {1, 0, 1}, {1, MaxDeckSize + 1, 1},
		{MaxCollisionHandSize + 1, 1000, 1}, {3, 10, -1}, {3, 10, MaxElephants + 1},
	} {
		_, err := collisionProbability(c[0], c[1], c[2])
		if !errors.Is(err, errCollisionArgs) {
			t.Errorf("CollisionProbability(%d, %d, %d): error %v, want ErrCollisionArgs", c[0], c[1], c[2], err)
		}
		var ae *ArgsError
		if !errors.As(err, &ae) || ae.HandSize != c[0] || ae.Queues != c[1] || ae.Elephants != c[2] || ae.Problem == "" {
			t.Errorf("CollisionProbability(%d, %d, %d): error %#v", c[0], c[1], c[2], err)
		}
	}
}

// Large inputs work and stay in [0, 1]: the largest hand a dealer can use
// with the largest deck and the most elephants. (The very corner of the
// domain, hand size MaxCollisionHandSize, is timed by
// BenchmarkCollisionWorstCase instead: under the race detector it is slow.)
func TestCollisionLargeInputs(t *testing.T) {
	for _, c := range [][3]int{
		{MaxHandSize, MaxDeckSize, MaxElephants},
		{MaxCollisionHandSize, MaxDeckSize, 16},
		{MaxCollisionHandSize, MaxCollisionHandSize, MaxElephants},
	} {
		p, err := collisionProbability(c[0], c[1], c[2])
		if err != nil || !(p >= 0 && p <= 1) {
			t.Errorf("H=%d N=%d E=%d: got %v, %v", c[0], c[1], c[2], p, err)
		}
	}
}

func BenchmarkSeedTable(b *testing.B) {
	configs, elephants := SeedConfigurations(), SeedElephants()
	for b.Loop() {
		if _, err := table(configs, elephants); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCollisionWorstCase(b *testing.B) {
	for b.Loop() {
		if _, err := collisionProbability(MaxCollisionHandSize, MaxDeckSize, MaxElephants); err != nil {
			b.Fatal(err)
		}
	}
}

// The fast float path must round exactly like the exact rational does.
func TestCollisionFloatMatchesRat(t *testing.T) {
	for _, c := range append(SeedConfigurations(), Configuration{3, 10}, Configuration{15, 16}, Configuration{20, 1 << 20}) {
		for _, e := range []int{0, 1, 2, 4, 16, 100} {
			r, err := collisionProbabilityRat(c.HandSize, c.Queues, e)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := r.Float64()
			if got, _ := collisionProbability(c.HandSize, c.Queues, e); got != want {
				t.Errorf("H=%d N=%d E=%d: float path %v, rational %v", c.HandSize, c.Queues, e, got, want)
			}
		}
	}
}

// collisionProbabilityRat is CollisionProbability as an exact rational.
//
// Fix the mouse's hand S (by symmetry its choice does not matter). The
// probability that all of a given j queues of S are missed by one elephant
// is C(N-j,H)/C(N,H), so by inclusion–exclusion over the subsets of S
//
//	P = Σ_{j=0..H} (-1)^j · C(H,j) · C(N-j,H)^E / C(N,H)^E.
//
// The sum is formed over the common denominator C(N,H)^E entirely in
// integers, so the heavy cancellation between its terms costs nothing in
// accuracy.
func collisionProbabilityRat(handSize, queues, elephants int) (*big.Rat, error) {
	num, den, err := collisionFraction(handSize, queues, elephants)
	if err != nil {
		return nil, err
	}
	return new(big.Rat).SetFrac(num, den), nil
}
