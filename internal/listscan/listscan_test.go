package apfhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// countChunks runs doc through a fresh itemCounter in chunks of size n
// (n ≤ 0: one chunk).
func countChunks(doc []byte, n int) (listCount, bool) {
	var c itemCounter
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

// countSplit runs doc through a fresh itemCounter in two chunks split at
// i, with an empty chunk in the middle.
func countSplit(doc []byte, i int) (listCount, bool) {
	var c itemCounter
	c.Write(doc[:i])
	c.Write(nil)
	c.Write(doc[i:])
	return c.result()
}

// referenceCount is what encoding/json makes of a list response: the
// top-level object decoded into a map (a repeated key keeps its last
// value), its items (or a Table's rows) into raw elements, and the
// metadata fields into their Go types.
func referenceCount(doc []byte) (listCount, bool) {
	if !json.Valid(doc) {
		return listCount{}, false
	}
	if t := bytes.TrimLeft(doc, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return listCount{}, false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return listCount{}, false
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
	var lc listCount
	elems, ok := array("items")
	if rows, rowsOK := array("rows"); isTable && rowsOK {
		elems, ok, lc.Table = rows, true, true
	}
	if !ok {
		return listCount{}, false
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
	want listCount
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
		listCount{Items: 2, Bytes: 7 + 9}, true},
	{"empty items", `{"kind":"PodList","items":[]}`, listCount{}, true},
	{"null items", `{"kind":"PodList","items":null}`, listCount{}, true},
	{"metadata after items", `{"items":[1,22,333],"metadata":{"continue":"tok","remainingItemCount":900}}`,
		listCount{Items: 3, Bytes: 6, Remaining: 900, HasRemaining: true, Continue: true}, true},
	{"continue only", `{"metadata":{"continue":"tok"},"items":[{}]}`,
		listCount{Items: 1, Bytes: 2, Continue: true}, true},
	{"empty continue", `{"metadata":{"continue":"","remainingItemCount":0},"items":[{}]}`,
		listCount{Items: 1, Bytes: 2, HasRemaining: true}, true},
	{"escaped continue", `{"metadata":{"continue":"\u0000"},"items":[]}`, listCount{Continue: true}, true},
	{"null continue", `{"metadata":{"continue":null},"items":[]}`, listCount{}, true},
	{"numeric continue", `{"metadata":{"continue":5},"items":[]}`, listCount{}, true},
	{"escaped keys", `{"it\u0065ms":[1,2,3],"m\u0065tadata":{"remaining\u0049temCount":7}}`,
		listCount{Items: 3, Bytes: 3, Remaining: 7, HasRemaining: true}, true},
	{"escaped key is not another", `{"items\u0000":[1]}`, listCount{}, false},
	{"escapes in items", `{"items":["a\"b","c\\\\","\u00e9\ud83d\ude00","\/\b\f\n\r\t"]}`,
		listCount{Items: 4, Bytes: 6 + 7 + 20 + 14}, true},
	{"brackets in strings", `{"items":[{"x":"]}[{,:\""},"}"]}`, listCount{Items: 2, Bytes: 16 + 3}, true},
	{"keys in items are not top-level", `{"items":[{"items":[1,2,3],"metadata":{"remainingItemCount":5}}]}`,
		listCount{Items: 1, Bytes: 53}, true},
	{"whitespace everywhere", " \n{ \"kind\" :\t\"PodList\" ,\r\n \"items\" : [ { \"a\" : [ 1 , 2 ] } ,\n\t\"x\" ] , \"metadata\" : { \"remainingItemCount\" : 4 } } \n",
		listCount{Items: 2, Bytes: 19 + 3, Remaining: 4, HasRemaining: true}, true},
	{"numbers", `{"x":-1.5e3,"y":0,"items":[0,-0,1.25,-7E+2,3e-1,10]}`, listCount{Items: 6, Bytes: 1 + 2 + 4 + 5 + 4 + 2}, true},
	{"literals", `{"a":true,"b":false,"items":[true,false,null]}`, listCount{Items: 3, Bytes: 13}, true},
	{"deep item", `{"items":[` + nested(200) + `]}`, listCount{Items: 1, Bytes: int64(len(nested(200)))}, true},
	{"table", `{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["a"]},{"cells":["b"]},{"cells":["c"]}]}`,
		listCount{Items: 3, Bytes: 3 * 15, Table: true}, true},
	{"table kind after rows", `{"rows":[{"cells":[1]}],"metadata":{"remainingItemCount":2},"kind":"Table"}`,
		listCount{Items: 1, Bytes: 13, Remaining: 2, HasRemaining: true, Table: true}, true},
	{"rows without table", `{"kind":"List","rows":[1],"items":[1,2]}`, listCount{Items: 2, Bytes: 2}, true},
	{"rows only, not a table", `{"kind":"List","rows":[1]}`, listCount{}, false},
	{"escaped Table", `{"kind":"T\u0061ble","rows":[1]}`, listCount{Items: 1, Bytes: 1, Table: true}, true},
	{"kind not a string", `{"kind":["Table"],"rows":[1],"items":[]}`, listCount{}, true},
	{"repeated items: last wins", `{"items":[1,2,3],"items":[4]}`, listCount{Items: 1, Bytes: 1}, true},
	{"repeated items: last is no array", `{"items":[1,2,3],"items":{}}`, listCount{}, false},
	{"repeated metadata", `{"metadata":{"remainingItemCount":3},"items":[],"metadata":{}}`, listCount{}, true},
	{"remaining negative", `{"metadata":{"remainingItemCount":-3},"items":[]}`, listCount{}, true},
	{"remaining minus zero", `{"metadata":{"remainingItemCount":-0},"items":[]}`, listCount{HasRemaining: true}, true},
	{"remaining fraction", `{"metadata":{"remainingItemCount":3.0},"items":[]}`, listCount{}, true},
	{"remaining exponent", `{"metadata":{"remainingItemCount":3e2},"items":[]}`, listCount{}, true},
	{"remaining max", `{"metadata":{"remainingItemCount":9223372036854775807},"items":[]}`,
		listCount{Remaining: 9223372036854775807, HasRemaining: true}, true},
	{"remaining overflow", `{"metadata":{"remainingItemCount":9223372036854775808},"items":[]}`, listCount{}, true},
	{"remaining null", `{"metadata":{"remainingItemCount":null},"items":[]}`, listCount{}, true},
	{"remaining string", `{"metadata":{"remainingItemCount":"5"},"items":[]}`, listCount{}, true},
	{"remaining nested", `{"metadata":{"x":{"remainingItemCount":5}},"items":[]}`, listCount{}, true},
	{"metadata not an object", `{"metadata":[{"remainingItemCount":5}],"items":[]}`, listCount{}, true},

	// Not lists.
	{"empty", ``, listCount{}, false},
	{"blank", " \n\t", listCount{}, false},
	{"array", `[{"items":[]}]`, listCount{}, false},
	{"string", `"items"`, listCount{}, false},
	{"null", `null`, listCount{}, false},
	{"number", `12`, listCount{}, false},
	{"no items", `{"kind":"Status","code":404}`, listCount{}, false},
	{"items not an array", `{"items":5}`, listCount{}, false},
	{"items a string", `{"items":"[1,2]"}`, listCount{}, false},
	{"truncated", `{"items":[1,2]`, listCount{}, false},
	{"truncated in string", `{"items":["ab`, listCount{}, false},
	{"trailing data", `{"items":[1,2]}x`, listCount{}, false},
	{"two objects", `{"items":[]}{"items":[]}`, listCount{}, false},
	{"trailing comma", `{"items":[1,]}`, listCount{}, false},
	{"trailing comma in object", `{"items":[],}`, listCount{}, false},
	{"mismatched brackets", `{"items":[{]}`, listCount{}, false},
	{"mismatched deep", `{"items":[{"a":[1}]}]}`, listCount{}, false},
	{"missing comma", `{"items":[1 2]}`, listCount{}, false},
	{"missing colon", `{"items" [1]}`, listCount{}, false},
	{"bare key", `{items:[1]}`, listCount{}, false},
	{"leading zero", `{"items":[01]}`, listCount{}, false},
	{"bad fraction", `{"items":[1.]}`, listCount{}, false},
	{"bad exponent", `{"items":[1e]}`, listCount{}, false},
	{"plus sign", `{"items":[+1]}`, listCount{}, false},
	{"lone minus", `{"items":[-]}`, listCount{}, false},
	{"control character", "{\"items\":[\"a\x01b\"]}", listCount{}, false},
	{"bad escape", `{"items":["\q"]}`, listCount{}, false},
	{"bad unicode escape", `{"items":["\u12G4"]}`, listCount{}, false},
	{"bad literal", `{"items":[tru]}`, listCount{}, false},
	{"capital literal", `{"items":[True]}`, listCount{}, false},
	{"single quotes", `{'items':[]}`, listCount{}, false},
	{"byte order mark", "\xef\xbb\xbf{\"items\":[]}", listCount{}, false},
	{"too deep", `{"items":[` + nested(maxScanDepth) + `]}`, listCount{}, false},
	{"deepest allowed", `{"items":[` + nested(maxScanDepth-2) + `]}`, listCount{Items: 1, Bytes: int64(len(nested(maxScanDepth - 2)))}, true},
	{"closer at top", `}`, listCount{}, false},
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
	var c itemCounter
	c.Write([]byte(`{"items":[1,2,3],"metadata":{"continue":"x","remainingItemCount":5},"kind":"Table","rows":[1]`))
	c.reset()
	c.Write([]byte(`{"items":[{}]}`))
	if got, ok := c.result(); !ok || got != (listCount{Items: 1, Bytes: 2}) {
		t.Fatalf("after reset: %+v %v", got, ok)
	}
	// Malformed stays malformed whatever follows.
	c.reset()
	c.Write([]byte(`{"items":[}`))
	c.Write([]byte(`]}`))
	if _, ok := c.result(); ok {
		t.Fatal("recovered from malformed input")
	}
}

// podListBody is a pod list of n items of exactly itemSize bytes each
// (itemSize ≥ 120), with meta the members of its metadata object.
func podListBody(n, itemSize int, meta string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":"PodList","apiVersion":"v1","metadata":{%s},"items":[`, meta)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		head := fmt.Sprintf(`{"metadata":{"name":"pod-%06d","namespace":"default","labels":{"app":"x\"y"}},"spec":{"nodeName":"n1","pad":"`, i)
		tail := `"}}`
		b.WriteString(head)
		b.WriteString(strings.Repeat("p", itemSize-len(head)-len(tail)))
		b.WriteString(tail)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

func TestPodListBody(t *testing.T) {
	doc := podListBody(250, 2000, `"resourceVersion":"7"`)
	got, ok := countChunks(doc, 4096)
	if !ok || got != (listCount{Items: 250, Bytes: 250 * 2000}) {
		t.Fatalf("%+v %v", got, ok)
	}
	if ref, _ := referenceCount(doc); ref != got {
		t.Fatalf("reference %+v", ref)
	}
}

func TestItemCounterDoesNotAllocate(t *testing.T) {
	doc := podListBody(50, 500, `"remainingItemCount":3,"continue":"abc"`)
	var c itemCounter
	if n := testing.AllocsPerRun(20, func() {
		c.reset()
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

// realisticPod is a pod as an API server encodes it: many short keys and
// values, a few escapes, nested objects and arrays.
const realisticPod = `{"metadata":{"name":"web-7c9f8d6b5-%05d","generateName":"web-7c9f8d6b5-","namespace":"default","uid":"0b7e3c7a-5a0e-4f43-9d1b-5d8c2f9a%04d","resourceVersion":"123456%d","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"web","pod-template-hash":"7c9f8d6b5","tier":"frontend"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-02T03:00:00Z","note":"say \"hi\" \\ \u00e9"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7c9f8d6b5","uid":"9a8b7c6d-1234-5678-9abc-def012345678","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"9a8b7c6d-1234-5678-9abc-def012345678\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}}]},"spec":{"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],"containers":[{"name":"web","image":"registry.example.com/web:1.2.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","nodeName":"node-%03d","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-02T03:04:05Z"},{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-02T03:04:09Z"}],"hostIP":"10.0.0.12","podIP":"10.244.1.%d","podIPs":[{"ip":"10.244.1.7"}],"startTime":"2026-01-02T03:04:05Z","containerStatuses":[{"name":"web","state":{"running":{"startedAt":"2026-01-02T03:04:08Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/web:1.2.3","imageID":"registry.example.com/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","containerID":"containerd://0123456789abcdef","started":true}],"qosClass":"Burstable"}}`

// realisticPodList is a pod list of at least size bytes.
func realisticPodList(size int) (doc []byte, items int) {
	var b bytes.Buffer
	b.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1234567"},"items":[`)
	for b.Len() < size {
		if items > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, realisticPod, items, items, items, items%1000, items%250)
		items++
	}
	b.WriteString("]}")
	return b.Bytes(), items
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
	var c itemCounter
	for b.Loop() {
		c.reset()
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
	var c itemCounter
	for b.Loop() {
		c.reset()
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
