package borrow

import (
	"errors"
	"testing"
)

func intp(v int) *int { return &v }

// bootstrapLevels are the mandatory and suggested priority levels
// (docs/spec/configuration.md#bootstrap-priority-levels), as the controller
// would hand them over.
func bootstrapLevels() []LevelConfig {
	return []LevelConfig{
		{Name: "exempt", Exempt: true, Shares: 0, LendablePercent: 0},
		{Name: "catch-all", Shares: 5, LendablePercent: 0},
		{Name: "system", Shares: 30, LendablePercent: 33, HandSize: 6},
		{Name: "node-high", Shares: 40, LendablePercent: 25, HandSize: 6},
		{Name: "leader-election", Shares: 10, LendablePercent: 0, HandSize: 4},
		{Name: "workload-high", Shares: 40, LendablePercent: 50, HandSize: 6},
		{Name: "workload-low", Shares: 100, LendablePercent: 90, HandSize: 6},
		{Name: "global-default", Shares: 20, LendablePercent: 50, HandSize: 6},
	}
}

func TestDefaultServerConcurrencyLimit(t *testing.T) {
	if DefaultServerConcurrencyLimit != 600 {
		t.Errorf("DefaultServerConcurrencyLimit = %d, want 600", DefaultServerConcurrencyLimit)
	}
}

// TestLimitsWorkedExample checks the limit columns of
// docs/spec/concurrency.md#worked-example.
func TestLimitsWorkedExample(t *testing.T) {
	want := []LevelLimits{
		{Name: "exempt", Exempt: true, Nominal: 0, Lendable: 0, Borrowing: 600, Lower: 0, Upper: 600, Initial: 0, MaxSeats: 0},
		{Name: "catch-all", Nominal: 13, Lendable: 0, Borrowing: 600, Lower: 13, Upper: 613, Initial: 13, MaxSeats: 0},
		{Name: "system", Nominal: 74, Lendable: 24, Borrowing: 600, Lower: 50, Upper: 674, Initial: 62, MaxSeats: 12},
		{Name: "node-high", Nominal: 98, Lendable: 25, Borrowing: 600, Lower: 73, Upper: 698, Initial: 86, MaxSeats: 15},
		{Name: "leader-election", Nominal: 25, Lendable: 0, Borrowing: 600, Lower: 25, Upper: 625, Initial: 25, MaxSeats: 4},
		{Name: "workload-high", Nominal: 98, Lendable: 49, Borrowing: 600, Lower: 49, Upper: 698, Initial: 74, MaxSeats: 15},
		{Name: "workload-low", Nominal: 245, Lendable: 221, Borrowing: 600, Lower: 24, Upper: 845, Initial: 135, MaxSeats: 37},
		{Name: "global-default", Nominal: 49, Lendable: 25, Borrowing: 600, Lower: 24, Upper: 649, Initial: 37, MaxSeats: 8},
	}
	got, sums := Limits(DefaultServerConcurrencyLimit, bootstrapLevels())
	if sums != (Sums{ServerLimit: 600, ShareSum: 245, NominalCLSum: 602}) {
		t.Errorf("sums = %+v, want shareSum 245, nominalCLSum 602", sums)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d levels, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("level %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestLimitsFormulas(t *testing.T) {
	tests := []struct {
		name  string
		scl   int
		other int // shares of a second, plain level (0: none)
		lc    LevelConfig
		want  LevelLimits // Name and Exempt are filled from lc
	}{
		{
			name: "alone gets everything", scl: 100,
			lc:   LevelConfig{Shares: 7},
			want: LevelLimits{Nominal: 100, Borrowing: 100, Lower: 100, Upper: 200, Initial: 100},
		},
		{
			name: "nominal rounds up", scl: 100, other: 2,
			lc:   LevelConfig{Shares: 1}, // 33.33
			want: LevelLimits{Nominal: 34, Borrowing: 100, Lower: 34, Upper: 134, Initial: 34},
		},
		{
			name: "lendable rounds half away from zero", scl: 10,
			lc:   LevelConfig{Shares: 1, LendablePercent: 25}, // 2.5
			want: LevelLimits{Nominal: 10, Lendable: 3, Borrowing: 10, Lower: 7, Upper: 20, Initial: 9},
		},
		{
			name: "lendable rounds down below half", scl: 10,
			lc:   LevelConfig{Shares: 1, LendablePercent: 24}, // 2.4
			want: LevelLimits{Nominal: 10, Lendable: 2, Borrowing: 10, Lower: 8, Upper: 20, Initial: 9},
		},
		{
			name: "everything lendable", scl: 10,
			lc:   LevelConfig{Shares: 1, LendablePercent: 100},
			want: LevelLimits{Nominal: 10, Lendable: 10, Borrowing: 10, Lower: 0, Upper: 20, Initial: 5},
		},
		{
			name: "borrowing limit", scl: 10,
			lc:   LevelConfig{Shares: 1, BorrowingLimitPercent: intp(35)}, // 3.5
			want: LevelLimits{Nominal: 10, Borrowing: 4, Lower: 10, Upper: 14, Initial: 10},
		},
		{
			name: "borrowing limit zero", scl: 10,
			lc:   LevelConfig{Shares: 1, BorrowingLimitPercent: intp(0)},
			want: LevelLimits{Nominal: 10, Borrowing: 0, Lower: 10, Upper: 10, Initial: 10},
		},
		{
			name: "borrowing limit above 100", scl: 10,
			lc:   LevelConfig{Shares: 1, BorrowingLimitPercent: intp(250)},
			want: LevelLimits{Nominal: 10, Borrowing: 25, Lower: 10, Upper: 35, Initial: 10},
		},
		{
			name: "exempt ignores the borrowing limit", scl: 10,
			lc:   LevelConfig{Exempt: true, Shares: 1, LendablePercent: 50, BorrowingLimitPercent: intp(10)},
			want: LevelLimits{Nominal: 10, Lendable: 5, Borrowing: 10, Lower: 5, Upper: 20, Initial: 8},
		},
		{
			name: "exempt has no max seats", scl: 600,
			lc:   LevelConfig{Exempt: true, Shares: 1, HandSize: 6},
			want: LevelLimits{Nominal: 600, Borrowing: 600, Lower: 600, Upper: 1200, Initial: 600},
		},
		{
			name: "max seats: 15% cap", scl: 1000,
			lc:   LevelConfig{Shares: 1, HandSize: 2}, // ceil(150) vs 500
			want: LevelLimits{Nominal: 1000, Borrowing: 1000, Lower: 1000, Upper: 2000, Initial: 1000, MaxSeats: 150},
		},
		{
			name: "max seats: 15% rounds up", scl: 101,
			lc:   LevelConfig{Shares: 1, HandSize: 1}, // ceil(15.15) vs 101
			want: LevelLimits{Nominal: 101, Borrowing: 101, Lower: 101, Upper: 202, Initial: 101, MaxSeats: 16},
		},
		{
			name: "max seats: hand-size cap", scl: 100,
			lc:   LevelConfig{Shares: 1, HandSize: 8}, // ceil(15) vs floor(12.5)
			want: LevelLimits{Nominal: 100, Borrowing: 100, Lower: 100, Upper: 200, Initial: 100, MaxSeats: 12},
		},
		{
			name: "max seats: at least 1", scl: 3,
			lc:   LevelConfig{Shares: 1, HandSize: 8}, // ceil(0.45)=1 vs 0
			want: LevelLimits{Nominal: 3, Borrowing: 3, Lower: 3, Upper: 6, Initial: 3, MaxSeats: 1},
		},
		{
			name: "zero shares", scl: 600, other: 5,
			lc:   LevelConfig{Shares: 0, LendablePercent: 50, HandSize: 6},
			want: LevelLimits{Nominal: 0, Borrowing: 600, Lower: 0, Upper: 600, Initial: 0, MaxSeats: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.lc.Name = "x"
			levels := []LevelConfig{tc.lc}
			if tc.other > 0 {
				levels = append(levels, LevelConfig{Name: "other", Shares: tc.other})
			}
			got, _ := Limits(tc.scl, levels)
			tc.want.Name, tc.want.Exempt = "x", tc.lc.Exempt
			if got[0] != tc.want {
				t.Errorf("\n got %+v\nwant %+v", got[0], tc.want)
			}
		})
	}
}

func TestLimitsSums(t *testing.T) {
	// Three equal shares of 100: each nominal rounds 33.3 up to 34.
	levels := []LevelConfig{{Name: "a", Shares: 1}, {Name: "b", Shares: 1}, {Name: "c", Shares: 1}}
	_, sums := Limits(100, levels)
	if sums != (Sums{ServerLimit: 100, ShareSum: 3, NominalCLSum: 102}) {
		t.Errorf("sums = %+v", sums)
	}
	// No shares at all: zeros rather than NaN conversions.
	got, sums := Limits(100, []LevelConfig{{Name: "a"}, {Name: "b", LendablePercent: 50}})
	if sums.NominalCLSum != 0 || got[0].Nominal != 0 || got[1].Lower != 0 || got[1].Upper != 100 {
		t.Errorf("zero shares: %+v %+v", got, sums)
	}
	// No levels.
	got, sums = Limits(100, nil)
	if len(got) != 0 || sums != (Sums{ServerLimit: 100}) {
		t.Errorf("no levels: %+v %+v", got, sums)
	}
}

func TestValidate(t *testing.T) {
	ok := LevelConfig{Name: "ok", Shares: 1}
	tests := []struct {
		name    string
		scl     int
		levels  []LevelConfig
		wantErr bool
	}{
		{name: "bootstrap", scl: 600, levels: bootstrapLevels()},
		{name: "no levels", scl: 1},
		{name: "borrowing above 100 is fine", scl: 1, levels: []LevelConfig{{Name: "a", Shares: 1, BorrowingLimitPercent: intp(300)}}},
		{name: "zero server limit", scl: 0, levels: []LevelConfig{ok}, wantErr: true},
		{name: "negative server limit", scl: -5, levels: []LevelConfig{ok}, wantErr: true},
		{name: "no name", scl: 1, levels: []LevelConfig{{Shares: 1}}, wantErr: true},
		{name: "duplicate", scl: 1, levels: []LevelConfig{ok, ok}, wantErr: true},
		{name: "negative shares", scl: 1, levels: []LevelConfig{ok, {Name: "a", Shares: -1}}, wantErr: true},
		{name: "lendable negative", scl: 1, levels: []LevelConfig{{Name: "a", Shares: 1, LendablePercent: -1}}, wantErr: true},
		{name: "lendable above 100", scl: 1, levels: []LevelConfig{{Name: "a", Shares: 1, LendablePercent: 101}}, wantErr: true},
		{name: "borrowing negative", scl: 1, levels: []LevelConfig{{Name: "a", Shares: 1, BorrowingLimitPercent: intp(-1)}}, wantErr: true},
		{name: "hand size negative", scl: 1, levels: []LevelConfig{{Name: "a", Shares: 1, HandSize: -1}}, wantErr: true},
		{name: "shares sum to zero", scl: 1, levels: []LevelConfig{{Name: "a"}, {Name: "b", Exempt: true}}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.scl, tc.levels)
			if tc.wantErr != (err != nil) {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, errInvalidConfig) {
				t.Fatalf("err = %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}
