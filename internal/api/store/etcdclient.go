package store

import clientv3 "go.etcd.io/etcd/client/v3"

// Client returns the etcd client the store uses, for a part of the server
// that keeps keys of its own beside the store's (apf serve's shared
// concurrency limit, under a prefix no resource uses). It stays the
// store's: do not close it.
func (e *Etcd) Client() *clientv3.Client { return e.cli }
