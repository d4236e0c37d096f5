package simreport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/apfproject/apf/sim"
)

// renderHTML writes the report of results and returns the page.
func renderHTML(t *testing.T, results ...*sim.Result) string {
	t.Helper()
	dir := t.TempDir()
	if err := HTML(dir, "", results...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// svgFragments cuts the inline SVG elements out of a page.
func svgFragments(page string) []string {
	var out []string
	for _, part := range strings.Split(page, "<svg ")[1:] {
		end := strings.Index(part, "</svg>")
		if end < 0 {
			return append(out, "<svg "+part) // left unterminated: fails the XML check
		}
		out = append(out, "<svg "+part[:end+len("</svg>")])
	}
	return out
}

type pageFacts struct {
	elements map[string]int
	text     string
	external []string // attributes that would fetch something
}

func parsePage(t *testing.T, page string) pageFacts {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	f := pageFacts{elements: map[string]int{}}
	var text strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			f.elements[n.Data]++
			for _, a := range n.Attr {
				if a.Key == "src" || a.Key == "href" || strings.Contains(a.Val, "url(") {
					f.external = append(f.external, n.Data+" "+a.Key+"="+a.Val)
				}
			}
		case html.TextNode:
			text.WriteString(n.Data)
			text.WriteByte('\n')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	f.text = text.String()
	return f
}

func TestHTMLSingle(t *testing.T) {
	r := sample("bootstrap", 1)
	page := renderHTML(t, r)
	f := parsePage(t, page)
	// Three plots per level, one CDF per top flow.
	if want := 3*len(r.Levels) + len(r.Flows); f.elements["svg"] != want {
		t.Errorf("%d plots, want %d", f.elements["svg"], want)
	}
	if f.elements["script"] != 0 || f.elements["link"] != 0 || f.elements["img"] != 0 || len(f.external) > 0 {
		t.Errorf("the page is not self-contained: %v %v", f.elements, f.external)
	}
	if f.elements["style"] != 1 || f.elements["table"] != 3 {
		t.Errorf("elements: %v", f.elements)
	}
	for _, want := range []string{"APF simulation: bootstrap", "global-default", "workload-low", "seats in use and limit",
		"requests waiting in queues", "rejections per sample interval", "global-default / flood", "share of requests",
		"nominal 20 seats, max borrowed +12, seat utilization 81.2%", "123ms"} {
		if !strings.Contains(f.text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, frag := range svgFragments(page) {
		elements, _ := wellFormed(t, frag)
		if count(elements, "path") == 0 && !strings.Contains(frag, "no data") {
			t.Errorf("plot without curves nor a no-data note:\n%s", frag)
		}
	}
	// The busy level's seat plot: seats in use and limit, one path each.
	frags := svgFragments(page)
	seats, _ := wellFormed(t, frags[3])
	if !strings.Contains(frags[3], "seats in use and limit") || count(seats, "path") != 2 {
		t.Errorf("global-default seats plot:\n%s", frags[3])
	}
	// The exempt level has no limit curve.
	exempt, _ := wellFormed(t, frags[0])
	if count(exempt, "path") != 1 {
		t.Errorf("exempt seats plot: %d paths", count(exempt, "path"))
	}
}

func TestHTMLCompare(t *testing.T) {
	a, b := sample("a.yaml", 1), sample("b.yaml", 2)
	b.Levels = b.Levels[:2]
	b.Flows = append(b.Flows, sim.FlowResult{FlowSchema: "global-default", Distinguisher: "bob", PriorityLevel: "global-default"})
	page := renderHTML(t, a, b)
	f := parsePage(t, page)
	if want := 3*3 + 3; f.elements["svg"] != want {
		t.Errorf("%d plots, want %d", f.elements["svg"], want)
	}
	// Per run: 3 tables; side by side: 2, with their columns that
	// matter, and each with every column on demand.
	if f.elements["table"] != 3+3+2+2 || f.elements["details"] != 2 {
		t.Errorf("%d tables, %d details", f.elements["table"], f.elements["details"])
	}
	for _, want := range []string{"Side by side", "A seats in use", "B limit", "DISPATCHED B", "Every column: Priority levels (Δ = B − A)", "global-default / bob"} {
		if !strings.Contains(f.text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	frags := svgFragments(page)
	seats, _ := wellFormed(t, frags[3])
	if count(seats, "path") != 4 || !strings.Contains(frags[3], "stroke-dasharray") {
		t.Errorf("overlaid seats plot:\n%s", frags[3])
	}
}

func TestHTMLEscapes(t *testing.T) {
	r := sample(`</title><script>alert("name")</script>`, 1)
	r.Levels[1].Name = `<script>alert(1)</script>`
	r.Flows[0].Distinguisher = `"><img src=x onerror=alert(2)>`
	page := renderHTML(t, r)
	f := parsePage(t, page)
	if f.elements["script"] != 0 || f.elements["img"] != 0 || len(f.external) > 0 {
		t.Errorf("markup injected: %v %v", f.elements, f.external)
	}
	if !strings.Contains(f.text, `<script>alert(1)</script>`) {
		t.Error("the hostile name is not shown as text")
	}
	for _, frag := range svgFragments(page) {
		wellFormed(t, frag)
	}
}
