package cliflag

import (
	"slices"
	"testing"
)

func TestChoice(t *testing.T) {
	v := "text"
	c := NewChoice(&v, "text", "json")
	if err := c.Set("yaml"); err == nil || err.Error() != "must be one of: text, json" || v != "text" {
		t.Errorf("yaml: %v, value %q", err, v)
	}
	if err := c.Set("json"); err != nil || v != "json" || c.String() != "json" {
		t.Errorf("json: %v, value %q", err, v)
	}
	ch := c.Choices()
	ch[0] = "changed"
	if !slices.Equal(c.Choices(), []string{"text", "json"}) {
		t.Errorf("Choices shares its slice")
	}
	if got := Usage("Output format.", "text", "json"); got != "Output format. One of: text, json." {
		t.Errorf("usage %q", got)
	}
}

func TestList(t *testing.T) {
	var p []string
	l := NewList(&p)
	for _, s := range []string{"a, b", "", " ,c,"} {
		if err := l.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(p, []string{"a", "b", "c"}) || l.String() != "a,b,c" {
		t.Errorf("%q", p)
	}
}
