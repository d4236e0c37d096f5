package pool

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/internal/proxy/wire"
)

// byHand sends a GET for path through p as a caller with connections of
// its own does: Begin, then for each member Point, a connection, End, and
// Release once the answer is read. held is called between End and
// Release.
func byHand(t *testing.T, p *Pool, ctx context.Context, path string, held func()) (int, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://pool"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	try := p.Begin(req)
	for {
		out := try.Point(req)
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", wire.Addr(out.URL))
		if err != nil {
			if try.End(false, 0, err) {
				continue
			}
			return 0, err
		}
		res, err := exchange(c, out)
		if err != nil {
			c.Close()
			try.End(true, 0, err)
			return 0, err
		}
		try.End(true, res.StatusCode, nil)
		if held != nil {
			held()
		}
		c.Close()
		try.Release()
		try.Release()
		return res.StatusCode, nil
	}
}

// exchange writes out on c and reads the answer's head and its body of
// known length.
func exchange(c net.Conn, out *http.Request) (*http.Response, error) {
	b, err := wire.AppendRequest(nil, out, nil)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(b); err != nil {
		return nil, err
	}
	var in []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		in = append(in, buf[:n]...)
		res, hn, f, perr := wire.ParseAnswerHead(in, out)
		if perr != nil {
			return nil, perr
		}
		if hn > 0 {
			for int64(len(in)-hn) < f.Length {
				n, err := c.Read(buf)
				if err != nil {
					return nil, err
				}
				in = append(in, buf[:n]...)
			}
			return res, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// summary is a member's figures that do not depend on when they were read.
type summary struct {
	Dispatched, Sent, Failed, Ejections uint64
	Outstanding, ConsecutiveFailures    int
}

func summaries(p *Pool) map[string]summary {
	out := map[string]summary{}
	for _, m := range p.Members() {
		out[m.Upstream] = summary{m.Dispatched, m.Sent, m.Failed, m.Ejections, m.Outstanding, m.ConsecutiveFailures}
	}
	return out
}

// TestTryAsRoundTrip: a caller that drives a Try leaves the pool in the
// state RoundTrip leaves it in for the same requests: the same counts,
// ejections and metrics, when the member is the only one or the pool's
// choice among several is forced.
func TestTryAsRoundTrip(t *testing.T) {
	good := newUpstream(t, ok)
	bad := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	cutter := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	})
	dead := refusing(t)
	scenarios := map[string]struct {
		members []string
		eject   *Ejection
		n       int
	}{
		"answers":                   {[]string{good.URL}, nil, 3},
		"5xx ejects":                {[]string{bad.URL}, &Ejection{ConsecutiveFailures: 2, Duration: time.Hour}, 5},
		"reached and failed":        {[]string{cutter.URL}, &Ejection{ConsecutiveFailures: 3, Duration: time.Hour}, 4},
		"unreachable":               {[]string{dead}, nil, 2},
		"unreachable, then another": {[]string{dead, good.URL}, &Ejection{ConsecutiveFailures: 1, Duration: time.Hour}, 3},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			var got [2]map[string]summary
			var gathered [2]map[string]float64
			for way := range 2 {
				reg := prometheus.NewRegistry()
				p := newPool(t, Options{Upstreams: sc.members, Ejection: sc.eject}, reg)
				if len(sc.members) > 1 {
					// The dead member goes first: the other starts
					// with a request outstanding.
					p.members[1].outstanding++
				}
				for range sc.n {
					if way == 0 {
						if resp, err := get(t, p, "/x", ""); err == nil {
							readAll(t, resp)
						}
					} else {
						_, _ = byHand(t, p, context.Background(), "/x", nil)
					}
				}
				if len(sc.members) > 1 {
					p.members[1].outstanding--
				}
				got[way] = summaries(p)
				gathered[way] = counters(t, reg)
			}
			if got[0] == nil || len(got[0]) != len(got[1]) {
				t.Fatalf("%v %v", got[0], got[1])
			}
			for k, v := range got[0] {
				if got[1][k] != v {
					t.Errorf("member %s: by RoundTrip %+v, by hand %+v", k, v, got[1][k])
				}
			}
			for k, v := range gathered[0] {
				if gathered[1][k] != v {
					t.Errorf("%s: %v by RoundTrip, %v by hand", k, v, gathered[1][k])
				}
			}
			if len(gathered[0]) != len(gathered[1]) {
				t.Errorf("series by RoundTrip %v, by hand %v", gathered[0], gathered[1])
			}
		})
	}
}

// counters is every counter and gauge of reg by its labels, and the
// number of latency observations.
func counters(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			k := f.GetName()
			for _, l := range m.GetLabel() {
				k += "," + l.GetName() + "=" + l.GetValue()
			}
			out[k] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// TestTryHoldsUntilRelease: the member counts the request outstanding from
// the pick until Release, and a request whose context ended is neither
// counted against the member nor sent elsewhere.
func TestTryHoldsUntilRelease(t *testing.T) {
	good := newUpstream(t, ok)
	p := newPool(t, Options{Upstreams: []string{good.URL}}, nil)
	status, err := byHand(t, p, context.Background(), "/x", func() {
		if m := p.Members()[0]; m.Outstanding != 1 {
			t.Errorf("answered, not released: outstanding %d", m.Outstanding)
		}
	})
	if err != nil || status != 200 {
		t.Fatalf("%d %v", status, err)
	}
	if m := p.Members()[0]; m.Outstanding != 0 || m.Sent != 1 {
		t.Errorf("released: %+v", m)
	}

	dead := refusing(t)
	p = newPool(t, Options{Upstreams: []string{dead, good.URL}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://pool/x", nil)
	try := p.Begin(req)
	if try.End(false, 0, ctx.Err()) {
		t.Error("a request whose context ended is sent to another member")
	}
	try.Release()
	for _, m := range p.Members() {
		if m.Outstanding != 0 || m.Failed != 0 || m.ConsecutiveFailures != 0 {
			t.Errorf("after a cancelled request: %+v", m)
		}
	}

	// Every member tried: the last error stands.
	p = newPool(t, Options{Upstreams: []string{dead, refusing(t)}}, nil)
	if _, err := byHand(t, p, context.Background(), "/x", nil); err == nil {
		t.Fatal("no error with every member refusing")
	}
	for _, m := range p.Members() {
		if m.Dispatched != 1 || m.Outstanding != 0 {
			t.Errorf("member %+v: want one attempt and nothing outstanding", m)
		}
	}
}

// TestNilTry: without a pool, a Try does nothing.
func TestNilTry(t *testing.T) {
	var try *Try
	req, _ := http.NewRequest(http.MethodGet, "http://upstream/x", nil)
	if try.Point(req) != req || try.End(false, 0, errors.New("x")) || try.Upstream() != "" {
		t.Fatal("a nil Try acted")
	}
	try.Release()
}
