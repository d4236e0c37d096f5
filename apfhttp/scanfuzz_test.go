package apfhttp

import "testing"

// FuzzItemCounter checks the streaming scanner against encoding/json on
// arbitrary bodies, and that where a body is split never changes the
// answer. The committed corpus (testdata/fuzz/FuzzItemCounter) holds list
// responses, tables, escapes, and malformed and truncated bodies; the
// table of TestItemCounter is added as seeds too.
func FuzzItemCounter(f *testing.F) {
	for _, tc := range countCases {
		if len(tc.doc) < 4096 {
			f.Add([]byte(tc.doc), uint16(len(tc.doc)/2))
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte, split uint16) {
		got, ok := countChunks(doc, 0)
		ref, refOK := referenceCount(doc)
		if got != ref || ok != refOK {
			t.Fatalf("scanner %+v %v, encoding/json %+v %v", got, ok, ref, refOK)
		}
		if ok && (got.Items < 0 || got.Bytes < got.Items || got.Bytes > int64(len(doc))) {
			t.Fatalf("impossible figures %+v for %d bytes", got, len(doc))
		}
		if g, o := countChunks(doc, int(split%61)+1); g != got || o != ok {
			t.Fatalf("chunks of %d: %+v %v, whole: %+v %v", split%61+1, g, o, got, ok)
		}
		if len(doc) > 0 {
			i := int(split) % (len(doc) + 1)
			if g, o := countSplit(doc, i); g != got || o != ok {
				t.Fatalf("split at %d: %+v %v, whole: %+v %v", i, g, o, got, ok)
			}
		}
	})
}
