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
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // gone with this program
	out, err := cmd.CombinedOutput()
	if err != nil {
		return WrkResult{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	return ParseWrk(string(out))
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
	r.Seconds, _ = strconv.ParseFloat(m[2], 64)
	switch m[3] {
	case "ms":
		r.Seconds /= 1000
	case "m":
		r.Seconds *= 60
	}
	if r.Seconds <= 0 {
		return WrkResult{}, errors.New("wrk ran for no time: " + out)
	}
	if n := wrkNon2xx.FindStringSubmatch(out); n != nil {
		r.Non2xx, _ = strconv.Atoi(n[1])
	}
	return r, nil
}
