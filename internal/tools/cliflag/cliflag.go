// Package cliflag holds the flag values apf's command line shares between
// cmd/apf and the packages whose options it registers (internal/server,
// internal/auth/authz): a string limited to a set of choices, refused while
// the command line is parsed, and a comma-separated list. Its values are
// pflag.Values; it depends on the standard library alone. It lives with
// the tools, the command line's other work, and sits below every room of
// internal/ that registers flags.
package cliflag

import (
	"fmt"
	"slices"
	"strings"
)

// Choice is a string flag value that takes one of a fixed set of values.
// Any other value is refused with the list of choices, so that a typo is a
// usage error at parse time and never reaches the command. Shell
// completion offers Choices.
type Choice struct {
	p       *string
	choices []string
	aliases map[string]string
}

// NewChoice returns a Choice storing into p, which keeps its current value
// as the default.
func NewChoice(p *string, choices ...string) *Choice {
	return &Choice{p: p, choices: choices}
}

// Alias makes the flag take alias too, as another name of choice (an old
// value kept so that scripts using it still work). Shell completion does
// not offer it.
func (c *Choice) Alias(alias, choice string) *Choice {
	if c.aliases == nil {
		c.aliases = map[string]string{}
	}
	c.aliases[alias] = choice
	return c
}

// Choices returns the values the flag takes.
func (c *Choice) Choices() []string { return slices.Clone(c.choices) }

func (c *Choice) String() string {
	if c == nil || c.p == nil {
		return ""
	}
	return *c.p
}

// Set implements pflag.Value.
func (c *Choice) Set(s string) error {
	if a, ok := c.aliases[s]; ok {
		s = a
	}
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("must be one of: %s", strings.Join(c.choices, ", "))
	}
	*c.p = s
	return nil
}

// Type implements pflag.Value.
func (c *Choice) Type() string { return "string" }

// Usage appends the choices to a flag's help sentence.
func Usage(usage string, choices ...string) string {
	return fmt.Sprintf("%s One of: %s.", usage, strings.Join(choices, ", "))
}

// List is a comma-separated, repeatable list of strings: every value given
// adds its items, trimmed, empty ones dropped.
type List struct{ p *[]string }

// NewList returns a List appending to p.
func NewList(p *[]string) *List { return &List{p: p} }

func (l *List) String() string {
	if l == nil || l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

// Set implements pflag.Value.
func (l *List) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l.p = append(*l.p, s)
		}
	}
	return nil
}

// Type implements pflag.Value.
func (l *List) Type() string { return "strings" }
