package capacity

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBounds reads FLOOR:CEILING, the bounds of an adaptive limit as an
// operator writes them on a command line (apf sim --adaptive-limit, apf
// serve --adaptive-concurrency-limit), into a Config with every other
// field left to its default. It refuses what New would refuse; the
// caller names the flag in front of the error.
func ParseBounds(v string) (Config, error) {
	lo, hi, ok := strings.Cut(v, ":")
	floor, err1 := strconv.Atoi(strings.TrimSpace(lo))
	ceiling, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil {
		return Config{}, fmt.Errorf("want FLOOR:CEILING, two numbers of seats such as 4:400")
	}
	cfg := Config{Floor: floor, Ceiling: ceiling}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
