package workestimate

import (
	"errors"
	"fmt"
)

var errTest = errors.New("test failure")

func wrap(err error) error { return fmt.Errorf("lookup: %w", err) }
