package proxies

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// WrkResult is what wrk reported.
type WrkResult struct {
	Total, Non2xx int     // requests answered; of them, not 2xx or 3xx
	Seconds       float64 // how long it ran
}

// Wrk runs wrk with args and reads its summary; it is killed after
// timeout.
func Wrk(timeout time.Duration, args ...string) (WrkResult, error) {
	out, err := Output(timeout, "wrk", args...)
	if err != nil {
		return WrkResult{}, err
	}
	return ParseWrk(out)
}

// Output runs a load generator with args and returns what it printed; it
// is killed after timeout, or with this program.
func Output(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return string(out), nil
}

// Seconds reads a figure and its unit (ms, s or m) as load generators
// print a duration.
func Seconds(figure, unit string) float64 {
	v, _ := strconv.ParseFloat(figure, 64)
	switch unit {
	case "ms":
		return v / 1000
	case "m":
		return v * 60
	}
	return v
}

var (
	wrkTotal  = regexp.MustCompile(`(\d+) requests in ([\d.]+)(ms|s|m)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// ParseWrk reads wrk's summary: "N requests in 20.01s, ..." and, when
// some answers were not 2xx or 3xx, "Non-2xx or 3xx responses: N".
func ParseWrk(out string) (WrkResult, error) {
	m := wrkTotal.FindStringSubmatch(out)
	if m == nil {
		return WrkResult{}, errors.New("wrk's output has no request count: " + out)
	}
	var r WrkResult
	r.Total, _ = strconv.Atoi(m[1])
	r.Seconds = Seconds(m[2], m[3])
	if r.Seconds <= 0 {
		return WrkResult{}, errors.New("wrk ran for no time: " + out)
	}
	if n := wrkNon2xx.FindStringSubmatch(out); n != nil {
		r.Non2xx, _ = strconv.Atoi(n[1])
	}
	return r, nil
}
