package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	apfrequest "github.com/apfproject/apf/request"
)

// gate is what the event-apf row adds to the event-loop relay for each
// request: the user from its bearer token (a token file as apf serve
// reads one: token,user,uid), APF with the built-in configuration
// (classification, work estimate, admission, the seat given back when the
// answer has been relayed, the metrics the controller keeps), and the PF
// headers on every answer. Admission never blocks the loop: a request its
// level queues waits on its connection, the requests after it unread,
// until the level's decision reaches the loop through its inbox
// (controller.AdmitFunc).
type gate struct {
	ctrl  *controller.Controller
	users map[string]apfrequest.User // by bearer token
}

// newGate starts a controller with the built-in configuration and limit
// seats, and reads the users of tokenFile.
func newGate(ctx context.Context, limit int, tokenFile string) (*gate, error) {
	var objs []config.Object
	for _, pl := range bootstrap.PriorityLevels() {
		pl.UID = types.UID("bootstrap-pl-" + pl.Name)
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		fs.UID = types.UID("bootstrap-fs-" + fs.Name)
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	c, err := controller.New(controller.Config{ServerConcurrencyLimit: limit, Source: controller.StaticSource(objs)})
	if err != nil {
		return nil, err
	}
	go c.Run(ctx)
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, err
	}
	g := &gate{ctrl: c, users: map[string]apfrequest.User{}}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			return nil, fmt.Errorf("%s: a line of fewer than 3 fields: %q", tokenFile, line)
		}
		g.users[f[0]] = apfrequest.User{Name: f[1], UID: f[2], Groups: []string{"system:authenticated"}}
	}
	return g, nil
}

var (
	bearer       = []byte("Bearer ")
	unauthorized = []byte("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
	badRequest   = []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
)

// admit authenticates the request m and admits it under ctx without
// blocking: a ticket to send it on under or the rejection, decided at
// once; the gate's own answer (401, 400); or queued, and call.later
// hears, from another goroutine, the level's decision. call is the
// connection's, reused from one request to the next: a connection has
// one admission at a time.
func (g *gate) admit(ctx context.Context, m message, call *admitCall) (t *controller.Ticket, local []byte, queued bool, err error) {
	if !bytes.HasPrefix(m.authorization, bearer) {
		return nil, unauthorized, false, nil
	}
	user, ok := g.users[string(m.authorization[len(bearer):])]
	if !ok {
		return nil, unauthorized, false, nil
	}
	path, query := m.target, []byte(nil)
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	info, perr := apfrequest.Parse(string(m.method), string(path), string(query))
	if perr != nil {
		return nil, badRequest, false, nil
	}
	a := apfrequest.Attributes{Info: info, User: user}
	call.state.Store(0)
	g.ctrl.AdmitFunc(ctx, &a, nil, call.heard)
	if call.state.CompareAndSwap(0, 2) {
		return nil, nil, true, nil
	}
	return call.t, nil, false, call.err
}

// admitCall tells an answer AdmitFunc gives before it returns from one
// given later: the first is the caller's to use at once, the second goes
// to later.
type admitCall struct {
	// state is 0 while AdmitFunc runs with no answer, 1 once answered
	// within it, 2 once it returned without one.
	state atomic.Int32
	t     *controller.Ticket
	err   error
	// heard is hear, bound once.
	heard func(*controller.Ticket, error)
	later func(*controller.Ticket, error)
}

func newAdmitCall(later func(*controller.Ticket, error)) *admitCall {
	c := &admitCall{later: later}
	c.heard = c.hear
	return c
}

func (c *admitCall) hear(t *controller.Ticket, err error) {
	if c.state.Load() == 2 {
		c.later(t, err)
		return
	}
	c.t, c.err = t, err
	if !c.state.CompareAndSwap(0, 1) {
		c.later(t, err)
	}
}

// rejection is the gate's answer to an admission that failed: kube's 429
// with Retry-After and the PF headers for a rejection.
func rejection(err error) []byte {
	var rej *controller.RejectedError
	if !errors.As(err, &rej) {
		return []byte("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
	}
	out := []byte("HTTP/1.1 429 Too Many Requests\r\nRetry-After: " + strconv.Itoa(rej.RetryAfter) + "\r\n")
	out = appendPFHeaders(out, rej.FlowSchemaUID, rej.PriorityLevelUID)
	return append(out, "Content-Length: 0\r\n\r\n"...)
}

// appendPFHeaders appends the X-Kubernetes-PF-* header lines.
func appendPFHeaders(b []byte, flowSchemaUID, priorityLevelUID string) []byte {
	b = append(b, "X-Kubernetes-PF-FlowSchema-UID: "...)
	b = append(b, flowSchemaUID...)
	b = append(b, "\r\nX-Kubernetes-PF-PriorityLevel-UID: "...)
	b = append(b, priorityLevelUID...)
	return append(b, "\r\n"...)
}
