package main

import (
	"fmt"

	"github.com/apfproject/apf/capacity"
)

// flagAdaptiveLimit names the flag that turns the adaptive server limit
// on, between a floor and a ceiling.
const flagAdaptiveLimit = "adaptive-limit"

// parseAdaptiveLimit reads FLOOR:CEILING, the bounds of the adaptive
// server limit (docs/spec/adaptive-limit.md); "" means a static limit.
func parseAdaptiveLimit(v string) (*capacity.Config, error) {
	if v == "" {
		return nil, nil
	}
	cfg, err := capacity.ParseBounds(v)
	if err != nil {
		return nil, fmt.Errorf("--%s %q: %w", flagAdaptiveLimit, v, err)
	}
	return &cfg, nil
}

// adaptiveOrigin says where an adaptive limit comes from, for the line
// under a report's headline.
func adaptiveOrigin(cfg *capacity.Config) string {
	return fmt.Sprintf("adaptive (--%s %d:%d): learned from the upstream's latencies, starting at the floor", flagAdaptiveLimit, cfg.Floor, cfg.Ceiling)
}
