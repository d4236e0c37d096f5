package apfhttp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unsafe"
)

// countChunks runs doc through a fresh listScanner in chunks of size n
// (n ≤ 0: one chunk).
func countChunks(doc []byte, n int) (listCounts, bool) {
	var c listScanner
	if n <= 0 {
		n = len(doc) + 1
	}
	for len(doc) > 0 {
		k := min(n, len(doc))
		c.Write(doc[:k])
		doc = doc[k:]
	}
	return c.result()
}

// countSplit runs doc through a fresh listScanner in two chunks split at
// i, with an empty chunk in the middle.
func countSplit(doc []byte, i int) (listCounts, bool) {
	var c listScanner
	c.Write(doc[:i])
	c.Write(nil)
	c.Write(doc[i:])
	return c.result()
}

// referenceCount is what encoding/json makes of a list response: the
// top-level object decoded into a map (a repeated key keeps its last
// value), its items (or a Table's rows) into raw elements, and the
// metadata fields into their Go types.
func referenceCount(doc []byte) (listCounts, bool) {
	if !json.Valid(doc) {
		return listCounts{}, false
	}
	if t := bytes.TrimLeft(doc, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return listCounts{}, false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return listCounts{}, false
	}
	array := func(name string) ([]json.RawMessage, bool) {
		raw, ok := top[name]
		if !ok {
			return nil, false
		}
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil {
			return nil, false
		}
		return a, true
	}
	var kind string
	isTable := json.Unmarshal(top["kind"], &kind) == nil && kind == "Table"
	var lc listCounts
	elems, ok := array("items")
	if rows, rowsOK := array("rows"); isTable && rowsOK {
		elems, ok, lc.Table = rows, true, true
	}
	if !ok {
		return listCounts{}, false
	}
	for _, e := range elems {
		lc.Items++
		lc.Bytes += int64(len(e))
	}
	var md map[string]json.RawMessage
	if raw, ok := top["metadata"]; ok && json.Unmarshal(raw, &md) == nil {
		if raw, ok := md["remainingItemCount"]; ok && string(raw) != "null" {
			var n int64
			if json.Unmarshal(raw, &n) == nil && n >= 0 {
				lc.Remaining, lc.HasRemaining = n, true
			}
		}
		var cont string
		lc.Continue = json.Unmarshal(md["continue"], &cont) == nil && cont != ""
	}
	return lc, true
}

type countCase struct {
	name string
	doc  string
	want listCounts
	ok   bool
}

// nested returns a JSON value nested depth levels deep.
func nested(depth int) string {
	var b strings.Builder
	for i := range depth {
		if i%2 == 0 {
			b.WriteString(`{"k":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString(`"leaf"`)
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	return b.String()
}

var countCases = []countCase{
	{"pod list", `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12"},"items":[{"a":1},{"b":"x"}]}`,
		listCounts{Items: 2, Bytes: 7 + 9}, true},
	{"empty items", `{"kind":"PodList","items":[]}`, listCounts{}, true},
	{"null items", `{"kind":"PodList","items":null}`, listCounts{}, true},
	{"metadata after items", `{"items":[1,22,333],"metadata":{"continue":"tok","remainingItemCount":900}}`,
		listCounts{Items: 3, Bytes: 6, Remaining: 900, HasRemaining: true, Continue: true}, true},
	{"continue only", `{"metadata":{"continue":"tok"},"items":[{}]}`,
		listCounts{Items: 1, Bytes: 2, Continue: true}, true},
	{"empty continue", `{"metadata":{"continue":"","remainingItemCount":0},"items":[{}]}`,
		listCounts{Items: 1, Bytes: 2, HasRemaining: true}, true},
	{"escaped continue", `{"metadata":{"continue":"\u0000"},"items":[]}`, listCounts{Continue: true}, true},
	{"null continue", `{"metadata":{"continue":null},"items":[]}`, listCounts{}, true},
	{"numeric continue", `{"metadata":{"continue":5},"items":[]}`, listCounts{}, true},
	{"escaped keys", `{"it\u0065ms":[1,2,3],"m\u0065tadata":{"remaining\u0049temCount":7}}`,
		listCounts{Items: 3, Bytes: 3, Remaining: 7, HasRemaining: true}, true},
	{"escaped key is not another", `{"items\u0000":[1]}`, listCounts{}, false},
	{"escapes in items", `{"items":["a\"b","c\\\\","\u00e9\ud83d\ude00","\/\b\f\n\r\t"]}`,
		listCounts{Items: 4, Bytes: 6 + 7 + 20 + 14}, true},
	{"brackets in strings", `{"items":[{"x":"]}[{,:\""},"}"]}`, listCounts{Items: 2, Bytes: 16 + 3}, true},
	{"keys in items are not top-level", `{"items":[{"items":[1,2,3],"metadata":{"remainingItemCount":5}}]}`,
		listCounts{Items: 1, Bytes: 53}, true},
	{"whitespace everywhere", " \n{ \"kind\" :\t\"PodList\" ,\r\n \"items\" : [ { \"a\" : [ 1 , 2 ] } ,\n\t\"x\" ] , \"metadata\" : { \"remainingItemCount\" : 4 } } \n",
		listCounts{Items: 2, Bytes: 19 + 3, Remaining: 4, HasRemaining: true}, true},
	{"numbers", `{"x":-1.5e3,"y":0,"items":[0,-0,1.25,-7E+2,3e-1,10]}`, listCounts{Items: 6, Bytes: 1 + 2 + 4 + 5 + 4 + 2}, true},
	{"literals", `{"a":true,"b":false,"items":[true,false,null]}`, listCounts{Items: 3, Bytes: 13}, true},
	{"deep item", `{"items":[` + nested(200) + `]}`, listCounts{Items: 1, Bytes: int64(len(nested(200)))}, true},
	{"table", `{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["a"]},{"cells":["b"]},{"cells":["c"]}]}`,
		listCounts{Items: 3, Bytes: 3 * 15, Table: true}, true},
	{"table kind after rows", `{"rows":[{"cells":[1]}],"metadata":{"remainingItemCount":2},"kind":"Table"}`,
		listCounts{Items: 1, Bytes: 13, Remaining: 2, HasRemaining: true, Table: true}, true},
	{"rows without table", `{"kind":"List","rows":[1],"items":[1,2]}`, listCounts{Items: 2, Bytes: 2}, true},
	{"rows only, not a table", `{"kind":"List","rows":[1]}`, listCounts{}, false},
	{"escaped Table", `{"kind":"T\u0061ble","rows":[1]}`, listCounts{Items: 1, Bytes: 1, Table: true}, true},
	{"kind not a string", `{"kind":["Table"],"rows":[1],"items":[]}`, listCounts{}, true},
	{"repeated items: last wins", `{"items":[1,2,3],"items":[4]}`, listCounts{Items: 1, Bytes: 1}, true},
	{"repeated items: last is no array", `{"items":[1,2,3],"items":{}}`, listCounts{}, false},
	{"repeated metadata", `{"metadata":{"remainingItemCount":3},"items":[],"metadata":{}}`, listCounts{}, true},
	{"remaining negative", `{"metadata":{"remainingItemCount":-3},"items":[]}`, listCounts{}, true},
	{"remaining minus zero", `{"metadata":{"remainingItemCount":-0},"items":[]}`, listCounts{HasRemaining: true}, true},
	{"remaining fraction", `{"metadata":{"remainingItemCount":3.0},"items":[]}`, listCounts{}, true},
	{"remaining exponent", `{"metadata":{"remainingItemCount":3e2},"items":[]}`, listCounts{}, true},
	{"remaining max", `{"metadata":{"remainingItemCount":9223372036854775807},"items":[]}`,
		listCounts{Remaining: 9223372036854775807, HasRemaining: true}, true},
	{"remaining overflow", `{"metadata":{"remainingItemCount":9223372036854775808},"items":[]}`, listCounts{}, true},
	{"remaining null", `{"metadata":{"remainingItemCount":null},"items":[]}`, listCounts{}, true},
	{"remaining string", `{"metadata":{"remainingItemCount":"5"},"items":[]}`, listCounts{}, true},
	{"remaining nested", `{"metadata":{"x":{"remainingItemCount":5}},"items":[]}`, listCounts{}, true},
	{"metadata not an object", `{"metadata":[{"remainingItemCount":5}],"items":[]}`, listCounts{}, true},

	// Not lists.
	{"empty", ``, listCounts{}, false},
	{"blank", " \n\t", listCounts{}, false},
	{"array", `[{"items":[]}]`, listCounts{}, false},
	{"string", `"items"`, listCounts{}, false},
	{"null", `null`, listCounts{}, false},
	{"number", `12`, listCounts{}, false},
	{"no items", `{"kind":"Status","code":404}`, listCounts{}, false},
	{"items not an array", `{"items":5}`, listCounts{}, false},
	{"items a string", `{"items":"[1,2]"}`, listCounts{}, false},
	{"truncated", `{"items":[1,2]`, listCounts{}, false},
	{"truncated in string", `{"items":["ab`, listCounts{}, false},
	{"trailing data", `{"items":[1,2]}x`, listCounts{}, false},
	{"two objects", `{"items":[]}{"items":[]}`, listCounts{}, false},
	{"trailing comma", `{"items":[1,]}`, listCounts{}, false},
	{"trailing comma in object", `{"items":[],}`, listCounts{}, false},
	{"mismatched brackets", `{"items":[{]}`, listCounts{}, false},
	{"mismatched deep", `{"items":[{"a":[1}]}]}`, listCounts{}, false},
	{"missing comma", `{"items":[1 2]}`, listCounts{}, false},
	{"missing colon", `{"items" [1]}`, listCounts{}, false},
	{"bare key", `{items:[1]}`, listCounts{}, false},
	{"leading zero", `{"items":[01]}`, listCounts{}, false},
	{"bad fraction", `{"items":[1.]}`, listCounts{}, false},
	{"bad exponent", `{"items":[1e]}`, listCounts{}, false},
	{"plus sign", `{"items":[+1]}`, listCounts{}, false},
	{"lone minus", `{"items":[-]}`, listCounts{}, false},
	{"control character", "{\"items\":[\"a\x01b\"]}", listCounts{}, false},
	{"bad escape", `{"items":["\q"]}`, listCounts{}, false},
	{"bad unicode escape", `{"items":["\u12G4"]}`, listCounts{}, false},
	{"bad literal", `{"items":[tru]}`, listCounts{}, false},
	{"capital literal", `{"items":[True]}`, listCounts{}, false},
	{"single quotes", `{'items':[]}`, listCounts{}, false},
	{"byte order mark", "\xef\xbb\xbf{\"items\":[]}", listCounts{}, false},
	{"too deep", `{"items":[` + nested(maxListDepth) + `]}`, listCounts{}, false},
	{"deepest allowed", `{"items":[` + nested(maxListDepth-2) + `]}`, listCounts{Items: 1, Bytes: int64(len(nested(maxListDepth - 2)))}, true},
	{"closer at top", `}`, listCounts{}, false},

	// Limits.
	{"one past the deepest", `{"items":[` + nested(maxListDepth-1) + `]}`, listCounts{}, false},
	{"long key beginning with a name", `{"items` + strings.Repeat("x", 2*captureSize) + `":[1]}`, listCounts{}, false},
	{"long key ending with a name", `{"` + strings.Repeat("x", 2*captureSize) + `items":[1]}`, listCounts{}, false},
	{"long escaped key beginning with a name", `{"items` + strings.Repeat(`\u0078`, captureSize) + `":[1]}`, listCounts{}, false},
	{"key of the capture's size", `{"metadata":{"remainingItemCount` + strings.Repeat("x", captureSize-18) + `":1},"items":[]}`, listCounts{}, true},
	{"key one past the capture's size", `{"metadata":{"remainingItemCount` + strings.Repeat("x", captureSize-17) + `":1},"items":[]}`, listCounts{}, true},
	{"long continue", `{"metadata":{"continue":"` + strings.Repeat("c", 10*captureSize) + `"},"items":[]}`, listCounts{Continue: true}, true},
	{"long escaped continue", `{"metadata":{"continue":"` + strings.Repeat(`\u00e9`, captureSize+1) + `"},"items":[]}`, listCounts{Continue: true}, true},
	{"long kind beginning with Table", `{"kind":"Table` + strings.Repeat(" ", 2*captureSize) + `","rows":[1],"items":[]}`, listCounts{}, true},
}

func TestItemCounter(t *testing.T) {
	for _, tc := range countCases {
		t.Run(tc.name, func(t *testing.T) {
			doc := []byte(tc.doc)
			got, ok := countChunks(doc, 0)
			if ref, refOK := referenceCount(doc); ref != got || refOK != ok {
				t.Fatalf("encoding/json says %+v %v, scanner %+v %v", ref, refOK, got, ok)
			}
			if ok != tc.ok || got != tc.want {
				t.Fatalf("whole: got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
			for _, n := range []int{1, 2, 7} {
				if g, o := countChunks(doc, n); g != got || o != ok {
					t.Fatalf("chunks of %d: %+v %v", n, g, o)
				}
			}
			if len(doc) > 5000 {
				return // the split points of the deep documents take long
			}
			for i := 0; i <= len(doc); i++ {
				if g, o := countSplit(doc, i); g != got || o != ok {
					t.Fatalf("split at %d: %+v %v", i, g, o)
				}
			}
		})
	}
}

func TestItemCounterReset(t *testing.T) {
	var c listScanner
	c.Write([]byte(`{"items":[1,2,3],"metadata":{"continue":"x","remainingItemCount":5},"kind":"Table","rows":[1]`))
	c.Reset()
	c.Write([]byte(`{"items":[{}]}`))
	if got, ok := c.result(); !ok || got != (listCounts{Items: 1, Bytes: 2}) {
		t.Fatalf("after reset: %+v %v", got, ok)
	}
	// Malformed stays malformed whatever follows.
	c.Reset()
	c.Write([]byte(`{"items":[}`))
	c.Write([]byte(`]}`))
	if _, ok := c.result(); ok {
		t.Fatal("recovered from malformed input")
	}
}

func TestPodListBody(t *testing.T) {
	doc := podList(250, 2000, `"resourceVersion":"7"`)
	got, ok := countChunks(doc, 4096)
	if !ok || got != (listCounts{Items: 250, Bytes: 250 * 2000}) {
		t.Fatalf("%+v %v", got, ok)
	}
	if ref, _ := referenceCount(doc); ref != got {
		t.Fatalf("reference %+v", ref)
	}
}

func TestItemCounterDoesNotAllocate(t *testing.T) {
	doc := podList(50, 500, `"remainingItemCount":3,"continue":"abc"`)
	var c listScanner
	if n := testing.AllocsPerRun(20, func() {
		c.Reset()
		for i := 0; i < len(doc); i += 7 {
			c.Write(doc[i:min(i+7, len(doc))])
		}
		if _, ok := c.result(); !ok {
			t.Fatal("not a list")
		}
	}); n != 0 {
		t.Fatalf("allocates %v per body", n)
	}
}

func TestRealisticPodList(t *testing.T) {
	doc, n := realisticPodList(64 << 10)
	got, ok := countChunks(doc, 1000)
	if ref, refOK := referenceCount(doc); !ok || !refOK || got != ref || got.Items != int64(n) {
		t.Fatalf("scanner %+v %v, encoding/json %+v %v, items %d", got, ok, ref, refOK, n)
	}
}

// BenchmarkListCounter scans a 1 MiB pod list (pods as an API server
// encodes them) in 32 KiB chunks, the size net/http's copy uses.
func BenchmarkListCounter(b *testing.B) {
	doc, n := realisticPodList(1 << 20)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var c listScanner
	for b.Loop() {
		c.Reset()
		for i := 0; i < len(doc); i += 32 << 10 {
			c.Write(doc[i:min(i+32<<10, len(doc))])
		}
		if lc, ok := c.result(); !ok || lc.Items != int64(n) {
			b.Fatal(lc, ok)
		}
	}
}

// BenchmarkListCounterIndented scans the same list indented, as some
// clients ask for it.
func BenchmarkListCounterIndented(b *testing.B) {
	doc, _ := realisticPodList(1 << 20)
	var buf bytes.Buffer
	if err := json.Indent(&buf, doc, "", "  "); err != nil {
		b.Fatal(err)
	}
	doc = buf.Bytes()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var c listScanner
	for b.Loop() {
		c.Reset()
		c.Write(doc)
		if _, ok := c.result(); !ok {
			b.Fatal("not a list")
		}
	}
}

// BenchmarkJSONValid is encoding/json's validator over the same list, for
// scale.
func BenchmarkJSONValid(b *testing.B) {
	doc, _ := realisticPodList(1 << 20)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if !json.Valid(doc) {
			b.Fatal("invalid")
		}
	}
}

// TestScannerSize keeps the listScanner the fixed size the top of
// scan.go gives, at most 1.5 KiB: the nesting bits and a few dozen
// words.
func TestScannerSize(t *testing.T) {
	if n := unsafe.Sizeof(listScanner{}); n > 1536 {
		t.Fatalf("a listScanner takes %d bytes", n)
	}
}
