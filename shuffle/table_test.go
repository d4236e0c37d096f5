package shuffle

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSeedDataIsCopied(t *testing.T) {
	c := SeedConfigurations()
	if len(c) != 11 || c[0] != (Configuration{12, 32}) || c[10] != (Configuration{6, 1024}) {
		t.Fatalf("SeedConfigurations() = %v", c)
	}
	c[0].HandSize = 99
	if SeedConfigurations()[0].HandSize != 12 {
		t.Error("SeedConfigurations returned shared storage")
	}
	e := SeedElephants()
	if !slices.Equal(e, []int{1, 4, 16}) {
		t.Fatalf("SeedElephants() = %v", e)
	}
	e[0] = 99
	if SeedElephants()[0] != 1 {
		t.Error("SeedElephants returned shared storage")
	}
}

func TestRow(t *testing.T) {
	elephants := []int{1, 4, 16}
	row, err := Row(8, 64, elephants)
	if err != nil {
		t.Fatal(err)
	}
	elephants[0] = 7 // the row must hold its own copy
	if row.HandSize != 8 || row.Queues != 64 || !slices.Equal(row.Elephants, []int{1, 4, 16}) || len(row.Probabilities) != 3 {
		t.Fatalf("Row = %+v", row)
	}
	if relDiff(row.Probabilities[0], 2.25929199850899e-10) > relTol {
		t.Errorf("Row(8, 64) first probability %v", row.Probabilities[0])
	}
	empty, err := Row(8, 64, nil)
	if err != nil || len(empty.Probabilities) != 0 {
		t.Errorf("Row with no elephants = %+v, %v", empty, err)
	}
}

func TestTableReportsBadRow(t *testing.T) {
	_, err := table([]Configuration{{8, 64}, {9, 8}}, []int{1})
	if !errors.Is(err, errCollisionArgs) || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("Table with a bad second row: %v", err)
	}
	if _, err := Row(8, 64, []int{-1}); !errors.Is(err, errCollisionArgs) {
		t.Errorf("Row with negative elephants: %v", err)
	}
}

// table computes one row per configuration, all with the same elephant
// counts. Table(SeedConfigurations(), SeedElephants()) reproduces the
// documentation's table. The first invalid configuration stops the
// computation; its error says which row it was.
func table(configs []Configuration, elephants []int) ([]TableRow, error) {
	rows := make([]TableRow, 0, len(configs))
	for i, c := range configs {
		row, err := Row(c.HandSize, c.Queues, elephants)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}
