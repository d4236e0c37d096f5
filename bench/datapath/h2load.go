package main

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/bench/internal/proxies"
)

// h2Result is what h2load reported of the requests it completed in its
// measurement's time.
type h2Result struct {
	ok, failed int     // answered 2xx or 3xx; not (another status, or no answer)
	seconds    float64 // how long it ran
}

// runH2load runs h2load against url over HTTP/2 (by ALPN) with the
// Authorization header auth.
func runH2load(s settings, url, auth string) (h2Result, error) {
	out, err := proxies.Output(s.duration+time.Minute, "h2load", "-t", strconv.Itoa(s.workers), "-c", strconv.Itoa(s.connections),
		"-m", strconv.Itoa(s.streams), "-D", wholeSeconds(s.duration), "-H", "authorization: "+auth, url)
	if err != nil {
		return h2Result{}, err
	}
	return parseH2load(out)
}

var (
	h2Finished = regexp.MustCompile(`finished in ([\d.]+)(ms|s|m)\b`)
	h2Requests = regexp.MustCompile(`requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed`)
)

// parseH2load reads h2load's summary: "finished in 10.00s, ...",
// "requests: N total, N started, N done, N succeeded, N failed, ..."
// (the requests completed in the measurement's time: h2load's "status
// codes" line also counts those answered then and completed after) and
// the protocol it spoke, which must be h2.
func parseH2load(out string) (h2Result, error) {
	if !strings.Contains(out, "Application protocol: h2\n") {
		return h2Result{}, errors.New("h2load did not speak HTTP/2: " + out)
	}
	f := h2Finished.FindStringSubmatch(out)
	rq := h2Requests.FindStringSubmatch(out)
	if f == nil || rq == nil {
		return h2Result{}, errors.New("h2load's output has no summary: " + out)
	}
	var r h2Result
	r.seconds = proxies.Seconds(f[1], f[2])
	r.ok, _ = strconv.Atoi(rq[1])
	r.failed, _ = strconv.Atoi(rq[2])
	if r.seconds <= 0 {
		return h2Result{}, errors.New("h2load ran for no time: " + out)
	}
	return r, nil
}
