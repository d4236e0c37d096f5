package top

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// queuingLevel is one level that queues, where everyone goes.
const queuingLevel = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: work}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse: {type: Queue, queuing: {queues: 8, handSize: 2, queueLengthLimit: 10}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: all}
spec:
  priorityLevelConfiguration: {name: work}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
`

// A paced level's measured service time and turn show in the view and
// the JSON as the controller's own apf_paced_* metrics state them (read
// from a registry the controller filled, so that a renamed metric fails
// here); a server that paces nothing shows nothing of it.
func TestPacedLevelsInTheReport(t *testing.T) {
	start := time.Unix(1767195045, 0)
	clk := fakeclock.New(start)
	objs, err := config.Decode([]byte(queuingLevel), "work.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Clock: clk, PacedDispatch: true, Source: controller.StaticSource(objs)})
	if err != nil {
		t.Fatal(err)
	}
	info, err := request.Parse("GET", "/api/v1/namespaces/default/pods", "")
	if err != nil {
		t.Fatal(err)
	}
	a := &request.Attributes{Info: info, User: request.User{Name: "alice", Groups: []string{"system:authenticated"}}}
	tk, err := c.Admit(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Millisecond)
	tk.Done()

	r := reportOf(t, start, c.RegisterPaced)
	var paced []Level
	for _, l := range r.Levels {
		if l.PacedServiceSeconds != nil {
			paced = append(paced, l)
		}
	}
	if len(paced) != 1 || paced[0].Name != "work" || *paced[0].PacedServiceSeconds != 0.02 || paced[0].PacedTurnSeconds == nil || *paced[0].PacedTurnSeconds <= 0 {
		t.Fatalf("paced levels %+v", paced)
	}
	var b bytes.Buffer
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	if want := "paced dispatch (measured service time, turn between starts): " + paced[0].Name + " 20ms, a turn every "; !strings.Contains(b.String(), want) {
		t.Errorf("the view lacks %q:\n%s", want, b.String())
	}
	var doc struct {
		Levels []map[string]any `json:"levels"`
	}
	if err := json.Unmarshal(mustJSON(t, r), &doc); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, l := range doc.Levels {
		if _, ok := l["pacedServiceSeconds"]; ok {
			found++
		}
	}
	if found != 1 {
		t.Errorf("%d levels carry pacedServiceSeconds in the JSON, want 1: %v", found, doc.Levels)
	}

	r = NewReport(nil, &Sample{Server: "https://gw:6443", At: start, Metrics: &Metrics{Levels: map[string]*LevelMetrics{}}, MetricsAt: start}, 0)
	b.Reset()
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "paced dispatch") || strings.Contains(string(mustJSON(t, r)), "paced") {
		t.Errorf("a server that paces nothing shows pacing:\n%s", b.String())
	}
}
