// Package shuffle implements shuffle sharding for API Priority and Fairness:
// the dealer that maps a flow's hash to a small set of queues (its "hand"),
// and the arithmetic that says how well a given choice of queue count and
// hand size protects quiet flows from loud ones.
//
// # Why shuffle sharding
//
// A priority level has N queues. If every flow were hashed to a single queue,
// one heavy flow (an "elephant") would ruin the latency of every light flow
// (a "mouse") that happened to hash to the same queue, and with only a few
// dozen queues that happens often. Instead each flow is dealt a hand of H
// distinct queues out of the N, derived deterministically from the flow's
// hash, and each request of the flow joins the least loaded queue of its
// hand. A mouse then suffers only if every one of its H queues is also held
// by some elephant. With N=64 and H=8 there are C(64,8) ≈ 4.4e9 possible
// hands, so two flows sharing a whole hand is very unlikely, while the
// scheduler still touches just H queues per request.
//
// # The dealer
//
// Dealer turns a 64-bit hash into a hand without allocating. The hash is
// read as a mixed-radix number with digits r[0] in [0,N), r[1] in [0,N-1),
// ..., r[H-1] in [0,N-H+1); digit i is then lifted past the cards already
// dealt by comparing it with the earlier raw digits from the most recent one
// backwards, which yields H distinct cards in [0,N). The construction is the
// one kube-apiserver uses (docs/spec/shuffle-sharding.md#dealing-a-hand),
// reproduced exactly so that a flow lands on the same queues here as
// upstream; every hash in [0, N·(N-1)·…·(N-H+1)) gives a different ordered
// hand, so a uniform hash gives a uniform hand.
//
// # The entropy bound
//
// That mapping consumes log2(N·(N-1)·…·(N-H+1)) bits of the hash, which is
// at most H·log2(N). Upstream budgets ceil(log2(N)·H) bits and refuses any
// configuration needing more than MaxHashBits (60). The reason is evenness:
// 2^64 is generally not a multiple of the number P of ordered hands, so some
// hands are reached by one hash value more than others. Keeping P ≤ 2^60
// leaves at least 16 hash values per hand, so no hand is more than 1/16 more
// likely than any other. This is also the rule API validation applies to
// queues/handSize (64 queues allow hands up to 10, 128 up to 8, 1024 up to
// 6), and it is why no hand is ever larger than 15 cards.
// RequiredEntropyBits keeps upstream's float64 formula for parity; it equals
// the exact integer value ceil(log2(N^H)) everywhere it matters (checked for
// every deck size up to MaxDeckSize and every result below 128 bits).
//
// # The collision table
//
// Row answers the sizing question: for a mouse with a
// uniformly random hand of H out of N queues and E elephants each holding an
// independent uniformly random hand, what is the probability that every
// queue of the mouse's hand is held by at least one elephant? The
// Kubernetes documentation publishes that number for eleven (H, N) pairs
// and 1, 4 and 16 elephants; Row over SeedConfigurations and
// SeedElephants reproduces that table. For one elephant the answer is 1/C(N,H); it grows quickly with E
// and falls quickly with N.
//
// The specification notes
// (docs/spec/shuffle-sharding.md#collision-probability) state the computation
// as a Markov chain over the size of the union of the elephants' hands. This
// package uses the equivalent inclusion–exclusion form
//
//	P = Σ_{j=0..H} (-1)^j · C(H,j) · (C(N-j,H) / C(N,H))^E
//
// (the j-term counts the ways a fixed set of j mouse queues can be missed by
// every elephant). Both are evaluated in exact integer/rational arithmetic,
// and the tests check that they agree exactly, but this form costs H+1
// big-integer powers instead of E·H·min(N,E·H) multiplications, so the whole
// table is computed in well under a millisecond. The float64 result is
// rounded once, from the exact value, so it is the nearest float64 to the
// true probability. The documentation's figures were evidently computed in
// floating point: 16 of its 33 differ from ours in the last digit (relative
// difference below 2.5e-16), which is why tests compare with a relative
// tolerance of 1e-12 rather than for equality.
//
// The package is pure computation: no I/O, no clock, no goroutines, and no
// dependency on the rest of apf.
package shuffle
