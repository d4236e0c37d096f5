package testproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A process's output lands in its log; Stop ends one that ignores nothing
// at SIGTERM, and kills one that ignores SIGTERM once the timeout passes.
func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	p, err := Start("/bin/sh", filepath.Join(dir, "echo"), "-c", "echo hello; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(p.LogPath)
		if strings.Contains(string(b), "hello") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %q", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if done, _ := p.Exited(); done {
		t.Fatal("exited early")
	}
	p.Stop(10 * time.Second)
	if done, err := p.Exited(); !done || err == nil {
		t.Fatalf("after Stop: exited %v, %v", done, err)
	}

	stubborn, err := Start("/bin/sh", filepath.Join(dir, "stubborn"), "-c", "trap '' TERM; echo ready; while :; do sleep 1; done")
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, _ := os.ReadFile(stubborn.LogPath)
		if strings.Contains(string(b), "ready") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	stubborn.Stop(200 * time.Millisecond)
	if done, _ := stubborn.Exited(); !done {
		t.Fatal("a process ignoring SIGTERM outlived Stop")
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("killed before the timeout")
	}
}

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil || port == "" || port == "0" {
		t.Fatalf("%q, %v", port, err)
	}
}
