//go:build unix

package wire

import "syscall"

// nothingToRead says whether the socket fd has nothing to read and is
// not at its end: a peek that would block.
func nothingToRead(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN
}
