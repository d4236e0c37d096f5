package controller

import (
	"testing"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/request"
)

// The external tests of this directory (package controller_test, which may
// import packages that import this one, such as apfdebug) share the
// fixtures of the internal ones through these names.

var T0 = t0

func NewTest(t *testing.T, src Source, scl int) (*Controller, *fakeclock.Clock) {
	return newTest(t, src, scl)
}

func Manifests(withTight bool) string { return manifests(withTight) }

func Decode(t *testing.T, y string) []config.Object { return decode(t, y) }

func Attrs(t *testing.T, user, method, path, query string) *request.Attributes {
	return attrs(t, user, method, path, query)
}

func LevelNamed(c *Controller, name string) LevelView { return level(c, name) }

func WaitFor(t *testing.T, what string, f func() bool) { waitFor(t, what, f) }

func (c *Controller) SampleMetrics() { c.sampleMetrics() }
func (c *Controller) Reload() error  { return c.reload() }
