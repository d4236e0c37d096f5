package main

import (
	"fmt"
	"strconv"
	"strings"

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
	lo, hi, ok := strings.Cut(v, ":")
	floor, err1 := strconv.Atoi(strings.TrimSpace(lo))
	ceiling, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("--%s %q: want FLOOR:CEILING, two numbers of seats such as 4:400", flagAdaptiveLimit, v)
	}
	cfg := &capacity.Config{Floor: floor, Ceiling: ceiling}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--%s %q: %w", flagAdaptiveLimit, v, err)
	}
	return cfg, nil
}

// adaptiveOrigin says where an adaptive limit comes from, for the line
// under a report's headline.
func adaptiveOrigin(cfg *capacity.Config) string {
	return fmt.Sprintf("adaptive (--%s %d:%d): learned from the upstream's latencies, starting at the floor", flagAdaptiveLimit, cfg.Floor, cfg.Ceiling)
}
