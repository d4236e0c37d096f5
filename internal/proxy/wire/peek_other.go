//go:build !unix

package wire

// nothingToRead cannot look without reading here: the connection is taken
// as it is, and a stale one shows as a failed write or read, which the
// transport sends again on a fresh connection (Resend).
func nothingToRead(uintptr) bool { return true }
