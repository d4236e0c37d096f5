// Package sim answers "what would this configuration do to this traffic?"
// by replaying traffic through the same classification, work estimation,
// fair queuing and borrowing code the server runs, on a virtual clock.
//
// This package must not depend on HTTP, etcd or the wall clock.
package sim
