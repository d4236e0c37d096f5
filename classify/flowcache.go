package classify

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// flowCacheSize is the number of slots of a matcher's flow-hash cache: 32
// KiB of pointers, enough for the active flows of a busy server to stay
// resident, small enough to be rebuilt with every configuration.
const flowCacheSize = 4096

// flowCache memoizes FlowHash. The hash must stay upstream's SHA-256 so that
// flows are dealt the same queues as in a Kubernetes API server, but SHA-256
// costs far more than the rest of classification, and a server sees the
// same flows again and again. The cache is direct-mapped: each slot holds at
// most one entry, replaced on a miss, read and written with single atomic
// pointer operations, so readers never block and never see a torn entry.
// A hit allocates nothing; a miss allocates the new entry.
// flowCacheMaxDistinguisher bounds the distinguishers the cache copies: a
// longer one (a namespace taken from a path kilobytes long, say) is hashed
// every time instead, so the cache holds at most flowCacheSize times this
// much whatever clients send.
const flowCacheMaxDistinguisher = 1024

type flowCache struct {
	seed  maphash.Seed
	slots [flowCacheSize]atomic.Pointer[flowEntry]
}

type flowEntry struct {
	schema        *FlowSchema
	distinguisher string
	hash          uint64
}

func newFlowCache() *flowCache { return &flowCache{seed: maphash.MakeSeed()} }

func (c *flowCache) hash(fs *FlowSchema, distinguisher string) uint64 {
	slot := &c.slots[(maphash.String(c.seed, distinguisher)+uint64(fs.Index)*0x9e3779b97f4a7c15)%flowCacheSize]
	if e := slot.Load(); e != nil && e.schema == fs && e.distinguisher == distinguisher {
		return e.hash
	}
	h := FlowHash(fs.Name, distinguisher)
	if len(distinguisher) > flowCacheMaxDistinguisher {
		return h
	}
	// The entry outlives the request: keep a copy of the distinguisher, not
	// a reference into the caller's memory.
	slot.Store(&flowEntry{schema: fs, distinguisher: strings.Clone(distinguisher), hash: h})
	return h
}
