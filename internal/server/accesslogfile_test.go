package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBufferedFile: lines written from many goroutines all reach the
// file, each goroutine's in its order, whether the writer goroutine, the
// requests themselves (past maxBuffered) or Close writes them; lines
// reach the file without Close too; nothing is written after Close.
func TestBufferedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b := newBufferedFile(f)
	if _, err := b.Write([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	// The writer goroutine writes it out without being asked.
	if err := waitFor(10*time.Second, func() bool {
		data, _ := os.ReadFile(path)
		return string(data) == "first\n"
	}); err != nil {
		t.Fatal("a line stayed in memory")
	}
	const writers, lines = 8, 5000
	pad := strings.Repeat("x", 300) // 8×5000 lines of ~320 B pass maxBuffered
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				if _, err := fmt.Fprintf(b, "%d %d %s\n", w, i, pad); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte("late\n")); err == nil {
		t.Error("a write after Close was accepted")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(got) != 1+writers*lines {
		t.Fatalf("%d lines in the file, want %d", len(got), 1+writers*lines)
	}
	for _, line := range got[1:] {
		var w, i int
		if _, err := fmt.Sscanf(line, "%d %d", &w, &i); err != nil || w < 0 || w >= writers {
			t.Fatalf("garbled line %.40q", line)
		}
		if i != next[w] {
			t.Fatalf("writer %d: line %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
}
