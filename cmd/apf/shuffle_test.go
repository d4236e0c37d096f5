package main

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// runShuffleForTest runs "apf shuffle" with args through the dispatcher.
func runShuffleForTest(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, append([]string{"shuffle"}, args...)...)
}

// tableLines splits table output into rows of whitespace-separated cells,
// dropping blank lines and the trailing note.
func tableLines(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasPrefix(line, "Rows marked") || line == shuffleTitle {
			continue
		}
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func closeTo(t *testing.T, cell string, want float64) {
	t.Helper()
	got, err := strconv.ParseFloat(cell, 64)
	if err != nil {
		t.Fatalf("cell %q is not a number", cell)
	}
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("cell %q, want %v", cell, want)
	}
}

func TestShuffleDefaultTable(t *testing.T) {
	code, out, errOut := runShuffleForTest(t, "-o", "wide")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != shuffleTitle {
		t.Errorf("first line %q, not what the table is", lines[0])
	}
	if h := strings.Join(strings.Fields(lines[1]), " "); h != "HandSize Queues 1 elephant 4 elephants 16 elephants EntropyBits" {
		t.Errorf("header %q", h)
	}
	rows := tableLines(out)[1:]
	if len(rows) != 11 {
		t.Fatalf("%d rows, want 11:\n%s", len(rows), out)
	}
	// First and last rows of the documentation's table.
	first, last := rows[0], rows[10]
	if first[0] != "12" || first[1] != "32" || first[5] != "60" || last[0] != "6" || last[1] != "1024" || last[5] != "60" {
		t.Errorf("rows %v ... %v", first, last)
	}
	closeTo(t, first[2], 4.428838398950118e-09)
	closeTo(t, first[3], 0.11431348830099144)
	closeTo(t, first[4], 0.9935089607656024)
	closeTo(t, last[2], 6.337324016514285e-16)
	closeTo(t, last[4], 4.517408062903668e-07)
	if strings.Contains(out, "over 60") {
		t.Error("a documentation row is marked as over the entropy bound")
	}
	// Full precision, as in the documentation.
	if !strings.Contains(out, "4.428838398950118e-09") {
		t.Errorf("output lacks the full-precision value:\n%s", out)
	}
}

func TestShuffleOneRow(t *testing.T) {
	code, out, _ := runShuffleForTest(t, "-o", "wide", "--hand-size", "8", "--queues", "64")
	rows := tableLines(out)
	if code != 0 || len(rows) != 2 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	r := rows[1]
	if r[0] != "8" || r[1] != "64" || r[5] != "48" {
		t.Errorf("row %v", r)
	}
	closeTo(t, r[2], 2.25929199850899e-10)
	closeTo(t, r[3], 0.0004886697053040446)
	closeTo(t, r[4], 0.35935114681123076)
}

func TestShuffleListsGiveEveryCombination(t *testing.T) {
	code, out, _ := runShuffleForTest(t, "-o", "wide", "--hand-size=6,8", "--queues=64,128", "--elephants=2")
	rows := tableLines(out)
	if code != 0 || len(rows) != 5 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if h := strings.Join(rows[0], " "); h != "HandSize Queues 2 elephants EntropyBits" {
		t.Errorf("header %q", h)
	}
	var got []string
	for _, r := range rows[1:] {
		got = append(got, r[0]+"/"+r[1])
	}
	if strings.Join(got, " ") != "6/64 6/128 8/64 8/128" {
		t.Errorf("rows in order %v", got)
	}
}

func TestShuffleMarksRowsOverTheEntropyBound(t *testing.T) {
	code, out, _ := runShuffleForTest(t, "-o", "wide", "--hand-size", "10,11", "--queues", "64")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	rows := tableLines(out)
	if len(rows) != 3 || rows[1][5] != "60" || strings.Join(rows[2][5:], " ") != "66 (over 60)" {
		t.Errorf("rows %v", rows)
	}
	if !strings.Contains(out, "Rows marked") {
		t.Errorf("no explanation of the mark:\n%s", out)
	}
}

func TestShuffleJSON(t *testing.T) {
	for _, flagName := range []string{"-o", "--output"} {
		code, out, errOut := runShuffleForTest(t, "--hand-size", "8,11", "--queues", "64", flagName, "json")
		if code != 0 {
			t.Fatalf("%s json: exit %d, stderr %q", flagName, code, errOut)
		}
		var rows []shuffleRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%s json: %v in %s", flagName, err, out)
		}
		if len(rows) != 2 {
			t.Fatalf("%d rows", len(rows))
		}
		r := rows[0]
		if r.HandSize != 8 || r.Queues != 64 || r.EntropyBits != 48 || !r.WithinEntropyBound ||
			len(r.Elephants) != 3 || r.Elephants[2] != 16 || len(r.Probabilities) != 3 {
			t.Errorf("row %+v", r)
		}
		if r.Probabilities[0] != 2.25929199850899e-10 {
			t.Errorf("probability %v lost precision", r.Probabilities[0])
		}
		if rows[1].EntropyBits != 66 || rows[1].WithinEntropyBound {
			t.Errorf("row %+v should be over the bound", rows[1])
		}
	}
	// The default table in JSON has all eleven rows.
	_, out, _ := runShuffleForTest(t, "-o", "json")
	var all []map[string]any
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 11 {
		t.Errorf("default JSON: %d rows, %v", len(all), err)
	}
}

func TestShuffleUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--hand-size", "8"},
		{"--queues", "64"},
		{"--hand-size", "eight", "--queues", "64"},
		{"--hand-size", "8,", "--queues", "64"},
		{"--elephants", "1,x"},
		{"-o", "xml"},
		{"--no-such-flag"},
		{"extra"},
		{"--hand-size"},
	} {
		code, out, errOut := runShuffleForTest(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if out != "" || errOut == "" {
			t.Errorf("%v: stdout %q, stderr %q", args, out, errOut)
		}
	}
}

func TestShuffleInvalidSizes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--hand-size", "9", "--queues", "8"}, []string{"hand size 9", "queues 8"}},
		{[]string{"--hand-size", "1", "--queues", "0"}, []string{"queues 0"}},
		{[]string{"--hand-size", "0", "--queues", "64"}, []string{"hand size 0"}},
		{[]string{"--hand-size", "65", "--queues", "1000"}, []string{"hand size 65", "at most 64"}},
		{[]string{"--elephants", "-1"}, []string{"elephants -1"}},
		{[]string{"--elephants", "5000"}, []string{"elephants 5000"}},
	} {
		code, out, errOut := runShuffleForTest(t, tc.args...)
		if code != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", tc.args, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q does not mention %q", tc.args, errOut, w)
			}
		}
	}
}

func TestShuffleHelp(t *testing.T) {
	code, out, errOut := runShuffleForTest(t, "--help")
	if code != 0 || errOut != "" || !strings.Contains(out, "--hand-size") || !strings.Contains(out, "-o, --output") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// main dispatches "shuffle" here.
func TestShuffleDispatch(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := dispatch([]string{"shuffle", "--hand-size", "8", "--queues", "64", "-o", "wide"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "2.25929199850899e-10") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// The text table says what it is and gives each probability as a
// percentage or as one chance in so many; -o table is the text, and -o
// yaml the JSON document.
func TestShuffleText(t *testing.T) {
	code, out, errOut := runShuffleForTest(t)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "Probability that a mouse flow") {
		t.Errorf("no line says what the table is:\n%s", out)
	}
	for _, want := range []string{"HAND SIZE", "1 in 226 million", "11.4%", "99.4%", "1 in 1.6e15", "1 in 2,190"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "e-") {
		t.Errorf("a probability in e notation:\n%s", out)
	}
	if _, table, _ := runShuffleForTest(t, "-o", "table"); table != out {
		t.Errorf("-o table is not the text:\n%s", table)
	}
	_, js, _ := runShuffleForTest(t, "-o", "json")
	_, ym, _ := runShuffleForTest(t, "-o", "yaml")
	var a, b any
	if err := json.Unmarshal([]byte(js), &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(ym), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("-o yaml is not the JSON document:\n%s", ym)
	}
}

func TestChance(t *testing.T) {
	for p, want := range map[float64]string{
		0: "0", 1: "100%", 0.99999: ">99.9%", 0.114313: "11.4%", 0.0275: "2.75%", 0.01: "1%",
		0.0099: "1 in 101", 0.00045571: "1 in 2,190", 3.4e-6: "1 in 294,000", 4.428838398950118e-09: "1 in 226 million",
		1.55e-8: "1 in 65 million", 2.2593e-10: "1 in 4.4 billion", 7.0e-13: "1 in 1.4 trillion", 6.337e-16: "1 in 1.6e15",
	} {
		if got := chance(p); got != want {
			t.Errorf("chance(%v) = %q, want %q", p, got, want)
		}
	}
}
