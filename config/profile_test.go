package config

import (
	"testing"

	"github.com/apfproject/apf/config/bootstrap"
)

// Every profile's objects are valid as the API judges writes: a server
// that maintains them must be able to store them.
func TestBootstrapProfilesValidate(t *testing.T) {
	for _, name := range bootstrap.Profiles() {
		p, ok := bootstrap.ParseProfile(name)
		if !ok {
			t.Fatalf("profile %q does not parse", name)
		}
		for _, pl := range p.PriorityLevels() {
			if errs := (Object{PriorityLevel: pl, Version: V1}).Validate(); len(errs) > 0 {
				t.Errorf("profile %s: priority level %s: %v", name, pl.Name, errs)
			}
		}
		for _, fs := range p.FlowSchemas() {
			if errs := (Object{FlowSchema: fs, Version: V1}).Validate(); len(errs) > 0 {
				t.Errorf("profile %s: FlowSchema %s: %v", name, fs.Name, errs)
			}
		}
	}
}
