// Package simreport renders what a simulation run produced (a sim.Result) for
// people and for programs: an aligned terminal summary (Table), the same
// figures as JSON (JSON), two runs of the same traffic side by side
// (Compare), and a self-contained HTML page with plots (HTML).
//
// # Model
//
// A Result holds three views of one run: per priority level (counts, queue
// waits, seats and how they moved with borrowing, plus time series sampled
// every SampleInterval), per FlowSchema (counts and waits), and the busiest
// flows (counts, waits and a wait-time CDF). Every renderer reads the same
// fields, so the terminal, JSON and HTML figures always agree; none of
// them computes anything the engine did not measure, apart from totals and
// differences.
//
// Rejections are shown by reason, with the three reasons of the upstream
// metrics ("queue-full", "concurrency-limit", "time-out") always as their
// own columns, in that order, and any other reason after them, so that
// tables from different runs line up.
//
// # The HTML report
//
// The page must open anywhere, offline and years later: one index.html, CSS
// inline, plots as inline SVG drawn by this package (svg.go: axes with
// "nice" ticks, labels, a legend, any number of line or step series), no
// scripts and no external fonts. All text goes through html/template, the
// SVG fragments included, so names taken from configurations or audit logs
// cannot inject markup. Long series are thinned to a bounded number of
// points per plot, keeping each bucket's minimum and maximum, so that peaks
// survive and the page stays small however long the run. With several
// results (compare mode) every plot overlays them: the same colour per
// quantity, one dash pattern per result.
//
// This package must not depend on the engine's internals, HTTP or the wall
// clock: it only reads a Result.
package simreport
