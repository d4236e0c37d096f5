package server

import (
	"fmt"
	"os"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/debug/shadow"
)

// checkShadow judges --shadow-config-dir alone: it shadows APF, so APF
// must be on, and the directory must be one (a typo would otherwise only
// show as an empty candidate).
func (o *Options) checkShadow() error {
	if o.ShadowConfigDir == "" {
		return nil
	}
	if !o.EnablePriorityAndFairness {
		return fmt.Errorf("--shadow-config-dir runs a candidate APF configuration beside the live one: it needs --enable-priority-and-fairness")
	}
	if o.ShadowConfigDir == o.ConfigDir {
		return fmt.Errorf("--shadow-config-dir %q is the live --config-dir: stage the candidate in a directory of its own", o.ShadowConfigDir)
	}
	fi, err := os.Stat(o.ShadowConfigDir)
	if err != nil {
		return fmt.Errorf("--shadow-config-dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--shadow-config-dir %q is not a directory", o.ShadowConfigDir)
	}
	return nil
}

// newShadow builds the shadow configuration of --shadow-config-dir: the
// stored objects with the directory's manifests applied over them, run on
// the live traffic by package shadow, which the controller tells of every
// request; the debug endpoints (package debugmux) serve its dump and its
// section of the console. Without the flag it does nothing, and the
// request path does not know of it.
func (s *Server) newShadow() error {
	o := s.opts
	if o.ShadowConfigDir == "" {
		return nil
	}
	sh, err := shadow.New(shadow.Config{
		Live:                   registry.NewSource(s.reg),
		Staged:                 controller.NewDirSource(o.ShadowConfigDir, o.ConfigPollInterval),
		ServerConcurrencyLimit: o.ServerConcurrencyLimit(),
		RequestTimeout:         o.RequestTimeout,
		DeadlineAwareQueueing:  o.DeadlineAwareQueueing,
		PacedDispatch:          o.Paced(),
		ObjectCounts:           s.learned,
		Watches:                s.ctl.Watches(),
		Registerer:             s.promReg,
		Logger:                 s.log.With("component", "shadow"),
	})
	if err != nil {
		return err
	}
	s.shadow = sh
	s.ctl.SetShadow(sh)
	return nil
}
