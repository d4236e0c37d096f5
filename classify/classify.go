package classify

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/apfproject/apf/request"
)

// Result is the classification of one request.
type Result struct {
	FlowSchema    *FlowSchema
	PriorityLevel *PriorityLevel
	// FlowDistinguisher and FlowHash identify the request's flow within its
	// level. Both are zero unless the level queues with more than one queue.
	FlowDistinguisher string
	FlowHash          uint64
}

// Classify finds the FlowSchema and priority level of a request and its
// flow. It never fails: a request no schema matches goes to catch-all. It
// answers from the memo when it classified a request with the same
// relevant fields recently (see memo), and allocates only when it did not
// and remembers the request.
func (m *Matcher) Classify(a *request.Attributes) Result {
	slot := m.memo.slot(a)
	if e := slot.Load(); e != nil && e.matches(a) {
		res := m.result(a, e.schema)
		res.FlowHash = e.hash
		return res
	}
	i := m.first(a)
	res := m.result(a, i)
	if res.FlowSchema.PriorityLevel.distinguishes {
		res.FlowHash = m.flows.hash(res.FlowSchema, res.FlowDistinguisher)
	}
	if memoizable(a) {
		slot.Store(newMemoEntry(a, i, res.FlowHash))
	}
	return res
}

// result is the classification of a request whose first matching schema
// is at position i of the matching order (len(schemas) for none), without
// the flow hash.
func (m *Matcher) result(a *request.Attributes, i int) Result {
	fs := m.catchAll
	if i < len(m.schemas) {
		fs = m.schemas[i]
	}
	res := Result{FlowSchema: fs, PriorityLevel: fs.PriorityLevel}
	if fs.PriorityLevel.distinguishes {
		switch fs.distinguisher {
		case distinguishByUser:
			res.FlowDistinguisher = a.User.Name
		case distinguishByNamespace:
			res.FlowDistinguisher = a.Info.Namespace
		}
	}
	return res
}

// FlowHash is the hash shuffle sharding deals a flow's hand from: the first
// eight bytes, little-endian, of SHA-256 over the schema name, a zero byte
// and the distinguisher. Keeping upstream's exact function means a flow gets
// the same queues here as in a Kubernetes API server.
func FlowHash(schema, distinguisher string) uint64 {
	// Short inputs are assembled on the stack; only unusually long names
	// cost an allocation.
	var buf [192]byte
	b := buf[:0]
	if n := len(schema) + 1 + len(distinguisher); n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = append(b, schema...)
	b = append(b, 0)
	b = append(b, distinguisher...)
	sum := sha256.Sum256(b)
	return binary.LittleEndian.Uint64(sum[:8])
}
