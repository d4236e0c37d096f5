package apfhttp

// maxListDepth is how many containers (objects and arrays) may be open at
// once, the bound encoding/json sets too. A deeper body is no list.
const maxListDepth = 10000

// nesting is the stack of open containers: how many there are, and for
// each whether it is an array or an object, one bit each, so that a closer
// is checked against its opener without recursion and in bounded memory.
type nesting struct {
	depth int
	// inArray says the innermost open container is an array. It is the
	// bit of arrays at depth-1, kept apart for the commas, which ask
	// for it most.
	inArray bool
	// arrays has bit d set when the container at depth d+1 is an array.
	// Bits at and above depth are stale and never read.
	arrays [(maxListDepth + 63) / 64]uint64
}

// push opens a container; it reports false when maxListDepth are open already.
func (n *nesting) push(array bool) bool {
	if n.depth >= maxListDepth {
		return false
	}
	word, bit := uint(n.depth)/64, uint64(1)<<(uint(n.depth)%64)
	if array {
		n.arrays[word] |= bit
	} else {
		n.arrays[word] &^= bit
	}
	n.depth++
	n.inArray = array
	return true
}

// pop closes the innermost container; it reports false when there is none
// or it is not of the closer's kind.
func (n *nesting) pop(array bool) bool {
	if n.depth == 0 || n.inArray != array {
		return false
	}
	n.depth--
	n.inArray = n.depth > 0 && n.arrays[uint(n.depth-1)/64]&(1<<(uint(n.depth-1)%64)) != 0
	return true
}
