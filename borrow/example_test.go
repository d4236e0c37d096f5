package borrow_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/apfproject/apf/borrow"
)

// Two levels that lend half their seats: while one is idle the other
// borrows, and the lender gets its seats back at the next adjustment after
// it needs them.
func ExampleAdjuster() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var a borrow.Adjuster
	// The driver keeps each level's demand: seats in use plus seats
	// waiting, integrated over time.
	lender, borrower := borrow.NewIntegrator(start), borrow.NewIntegrator(start)
	windows := func(now time.Time) []borrow.Stats {
		return []borrow.Stats{lender.Reset(now), borrower.Reset(now)}
	}
	adjs, err := a.SetLevels(200, []borrow.LevelConfig{
		{Name: "lender", Shares: 1, LendablePercent: 50, HandSize: 4},
		{Name: "borrower", Shares: 1, LendablePercent: 50, HandSize: 4},
	}, nil)
	if err != nil {
		panic(err)
	}
	show := func(adjs []borrow.Adjustment) {
		var parts []string
		for _, adj := range adjs {
			parts = append(parts, fmt.Sprintf("%s %d [%d..%d]", adj.Name, adj.Current, adj.Lower, adj.Upper))
		}
		fmt.Println(strings.Join(parts, ", "))
	}
	show(adjs)

	// The borrower's queues fill up (seats in use plus seats waiting).
	borrower.Set(start, 400)
	now := start.Add(borrow.AdjustmentPeriod)
	show(a.Update(windows(now)))

	// The lender becomes busy again.
	lender.Set(now.Add(time.Second), 100)
	show(a.Update(windows(now.Add(borrow.AdjustmentPeriod))))
	// Output:
	// lender 100 [50..300], borrower 100 [50..300]
	// lender 50 [50..300], borrower 150 [50..300]
	// lender 100 [50..300], borrower 100 [50..300]
}

func ExampleLimits() {
	limits, sums := borrow.Limits(borrow.DefaultServerConcurrencyLimit, []borrow.LevelConfig{
		{Name: "exempt", Exempt: true},
		{Name: "catch-all", Shares: 5},
		{Name: "workload-low", Shares: 100, LendablePercent: 90, HandSize: 6},
	})
	for _, l := range limits {
		fmt.Printf("%s nominal %d lower %d upper %d maxSeats %d\n", l.Name, l.Nominal, l.Lower, l.Upper, l.MaxSeats)
	}
	fmt.Println("nominal sum", sums.NominalCLSum)
	// Output:
	// exempt nominal 0 lower 0 upper 600 maxSeats 0
	// catch-all nominal 29 lower 29 upper 629 maxSeats 0
	// workload-low nominal 572 lower 57 upper 1172 maxSeats 86
	// nominal sum 601
}
