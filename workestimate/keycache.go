package workestimate

import "sync"

// maxCachedKeys bounds a keyCache: request paths are chosen by clients, so
// the set of (group, resource) pairs a server sees is not bounded by its
// API.
const maxCachedKeys = 4096

// keyCache remembers the ObjectCounts key of each (group, resource) pair,
// so that estimating a list in a named group does not build the string
// "resource.group" on every request. Past maxCachedKeys pairs new keys are
// built each time.
type keyCache struct {
	mu   sync.RWMutex
	keys map[[2]string]string
}

func (c *keyCache) key(group, resource string) string {
	if group == "" {
		return resource
	}
	pair := [2]string{group, resource}
	c.mu.RLock()
	k, ok := c.keys[pair]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = Key(group, resource)
	c.mu.Lock()
	if c.keys == nil {
		c.keys = make(map[[2]string]string)
	}
	if len(c.keys) < maxCachedKeys {
		c.keys[pair] = k
	}
	c.mu.Unlock()
	return k
}
