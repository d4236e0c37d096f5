package sim

import (
	"bufio"
	"compress/gzip"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

var auditMemoryLines = flag.Int("audit-memory-lines", 60000, "lines of the generated log TestAuditMemoryBounded replays")

// countingWriter counts the lines and bytes written through it.
type countingWriter struct {
	w            io.Writer
	lines, bytes int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.lines++
		}
	}
	c.bytes += int64(len(p))
	return c.w.Write(p)
}

// heapSampler is a Source that passes another's arrivals on and, every
// so many, collects the garbage and records the live heap.
type heapSampler struct {
	src   Source
	n     int64
	peaks []uint64 // the peak live heap of each quarter of the run
	total int64
}

func (h *heapSampler) Next() (Arrival, bool, error) {
	a, ok, err := h.src.Next()
	if ok && h.n%8192 == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		q := min(int(h.n*4/max(h.total, 1)), 3)
		h.peaks[q] = max(h.peaks[q], ms.HeapAlloc)
	}
	h.n++
	return a, ok, err
}

// TestAuditMemoryBounded replays a long generated log in kube-apiserver's
// format (a 50-node cluster, every stage, bodies; minute after minute)
// and checks that the live heap is bounded by what is in flight: it is
// no larger at the end of the replay than at its start, and a small
// fraction of the log. -audit-memory-lines sets the log's length.
func TestAuditMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and replays a long log")
	}
	path := filepath.Join(t.TempDir(), "audit.log.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	zw, _ := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	cw := &countingWriter{w: zw}
	start := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; cw.lines < int64(*auditMemoryLines); i++ {
		// Minute after minute, each drawn afresh: a log of any length
		// without holding it.
		if _, err := WriteAuditFixture(cw, FixtureOptions{Seed: uint64(i + 1), Cluster: true, Start: start.Add(time.Duration(i) * time.Minute), Nodes: 50}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	src, err := OpenAuditLogs([]string{path}, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := &heapSampler{src: src, peaks: make([]uint64, 4), total: cw.lines / 2}
	r, err := Run(context.Background(), Config{}, h)
	if err != nil {
		t.Fatal(err)
	}
	st := src.AuditStats()
	if st.Lines != cw.lines || st.Requests != r.Requests || st.Lines != st.Requests+st.SkippedLines() {
		t.Fatalf("%d lines written; %d read, %d requests, %d replayed, %d skipped", cw.lines, st.Lines, st.Requests, r.Requests, st.SkippedLines())
	}
	var peak uint64
	for _, p := range h.peaks {
		peak = max(peak, p)
	}
	t.Logf("%d lines (%d MiB uncompressed), %d requests over %v: peak live heap %.1f MiB (%.1f MiB before the replay), by quarter %v MiB",
		cw.lines, cw.bytes>>20, r.Requests, r.Duration.Round(time.Second), mib(peak), mib(before.HeapAlloc), mibs(h.peaks))
	// Bounded by what is in flight: the last quarter of the replay holds
	// no more than the first (give or take the collector's slack and the
	// per-second series), and the whole is a fraction of the log.
	if last, first := h.peaks[3], h.peaks[0]; first > 0 && last > first+first/2+8<<20 {
		t.Errorf("the live heap grew from %.1f MiB to %.1f MiB over the replay", mib(first), mib(last))
	}
	if peak-min(peak, before.HeapAlloc) > 64<<20 {
		t.Errorf("peak live heap %.1f MiB over the %.1f MiB before", mib(peak), mib(before.HeapAlloc))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func mibs(bs []uint64) []float64 {
	out := make([]float64, len(bs))
	for i, b := range bs {
		out[i] = float64(int(mib(b)*10)) / 10
	}
	return out
}
