package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The CPU a proxy spends is read from /proc: utime+stime of every process
// of its process group (nginx's master and workers; HAProxy, apf and the
// Go processes are one process each, all threads counted), before and
// after a load.

// userHZ is the unit of the times in /proc/PID/stat, clock ticks a
// second: USER_HZ, 100 on every architecture Linux and Go share.
const userHZ = 100

// parseStat reads a /proc/PID/stat line: the process's group, and the
// CPU time its threads have spent in user and system mode, in ticks. The
// command name (2nd field, in parentheses) may hold spaces and
// parentheses itself: the fields are counted from the last ')'.
func parseStat(b []byte) (pgrp int, ticks uint64, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("no command name in /proc/PID/stat")
	}
	// After the name: state, ppid, pgrp, session, tty_nr, tpgid, flags,
	// minflt, cminflt, majflt, cmajflt, utime, stime, ...
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/PID/stat has %d fields after the command name, not 13 or more", len(f))
	}
	if pgrp, err = strconv.Atoi(f[2]); err != nil {
		return 0, 0, fmt.Errorf("pgrp: %w", err)
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("stime: %w", err)
	}
	return pgrp, utime + stime, nil
}

// groupCPU is the CPU time spent so far by the processes of the group
// pgid that are alive, read from procRoot (/proc).
func groupCPU(procRoot string, pgid int) (time.Duration, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, err
	}
	var ticks uint64
	found := false
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue // exited since the listing
		}
		g, t, err := parseStat(b)
		if err != nil || g != pgid {
			continue
		}
		ticks += t
		found = true
	}
	if !found {
		return 0, fmt.Errorf("no process of group %d in %s", pgid, procRoot)
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// measureCPU runs openLoop and returns, beside its counts, the CPU each
// of groups (process group ids) spent from just before the first send
// until the last answer.
func measureCPU(addr string, req []byte, rate float64, conns int, d time.Duration, groups []int) (loadResult, []time.Duration, error) {
	read := func() ([]time.Duration, error) {
		out := make([]time.Duration, len(groups))
		for i, g := range groups {
			c, err := groupCPU("/proc", g)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	var before []time.Duration
	var beforeErr error
	l, err := openLoop(addr, req, rate, conns, d, func() { before, beforeErr = read() })
	if err != nil {
		return l, nil, err
	}
	if beforeErr != nil {
		return l, nil, beforeErr
	}
	after, err := read()
	if err != nil {
		return l, nil, err
	}
	for i := range after {
		after[i] -= before[i]
	}
	return l, after, nil
}
