package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

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
// headers on every answer. A request that its level would queue blocks
// the loop until it is dispatched: the row is measured with a limit no
// load reaches, as the apf row is, so that none queues.
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

// admit authenticates and admits the request m: a ticket to send it on
// under, or the gate's own answer.
func (g *gate) admit(m message) (*controller.Ticket, []byte) {
	if !bytes.HasPrefix(m.authorization, bearer) {
		return nil, unauthorized
	}
	user, ok := g.users[string(m.authorization[len(bearer):])]
	if !ok {
		return nil, unauthorized
	}
	path, query := m.target, []byte(nil)
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	info, err := apfrequest.Parse(string(m.method), string(path), string(query))
	if err != nil {
		return nil, badRequest
	}
	a := apfrequest.Attributes{Info: info, User: user}
	t, err := g.ctrl.Admit(context.Background(), &a)
	if err != nil {
		var rej *controller.RejectedError
		if !errors.As(err, &rej) {
			return nil, []byte("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
		}
		out := []byte("HTTP/1.1 429 Too Many Requests\r\nRetry-After: " + strconv.Itoa(rej.RetryAfter) + "\r\n")
		out = appendPFHeaders(out, rej.FlowSchemaUID, rej.PriorityLevelUID)
		return nil, append(out, "Content-Length: 0\r\n\r\n"...)
	}
	return t, nil
}

// appendPFHeaders appends the X-Kubernetes-PF-* header lines.
func appendPFHeaders(b []byte, flowSchemaUID, priorityLevelUID string) []byte {
	b = append(b, "X-Kubernetes-PF-FlowSchema-UID: "...)
	b = append(b, flowSchemaUID...)
	b = append(b, "\r\nX-Kubernetes-PF-PriorityLevel-UID: "...)
	b = append(b, priorityLevelUID...)
	return append(b, "\r\n"...)
}
