package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/apfproject/apf/clock/fakeclock"
)

// A FlowSchema naming a missing level is logged at debug level, as
// kube-apiserver logs it (verbosity 6); an invalid level is still an
// error.
func TestProblemLogLevels(t *testing.T) {
	var logs bytes.Buffer
	src := StaticSource(decode(t, `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: broken}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Reject, queuing: {queues: 4, handSize: 2, queueLengthLimit: 5}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: lost}
spec:
  priorityLevelConfiguration: {name: nowhere}
  matchingPrecedence: 100
`))
	_, err := New(Config{Source: src, Clock: fakeclock.New(t0),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	var dangling, broken string
	for _, line := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(line, `FlowSchema \"lost\"`):
			dangling = line
		case strings.Contains(line, `PriorityLevelConfiguration \"broken\"`):
			broken = line
		}
	}
	if !strings.Contains(dangling, "level=DEBUG") || !strings.Contains(dangling, `dangling: priority level \"nowhere\"`) {
		t.Errorf("dangling FlowSchema: %q", dangling)
	}
	if !strings.Contains(broken, "level=ERROR") {
		t.Errorf("broken level: %q\n%s", broken, logs.String())
	}
}
