package fairqueue

// reqList is an intrusive doubly linked list of requests. The links live in
// the Request itself, so adding and removing allocate nothing and removal
// from the middle (a cancelled waiter, a finished request) is O(1). A
// request is on at most one list at a time: its queue's waiting list, its
// queue's executing list, or the queue set's queueless executing list.
type reqList struct {
	head, tail *Request
	n          int
}

// pushBack appends r, which must not be on any list.
func (l *reqList) pushBack(r *Request) {
	r.prev, r.next = l.tail, nil
	if l.tail == nil {
		l.head = r
	} else {
		l.tail.next = r
	}
	l.tail = r
	l.n++
}

// remove unlinks r, which must be on l.
func (l *reqList) remove(r *Request) {
	if r.prev == nil {
		l.head = r.next
	} else {
		r.prev.next = r.next
	}
	if r.next == nil {
		l.tail = r.prev
	} else {
		r.next.prev = r.prev
	}
	r.prev, r.next = nil, nil
	l.n--
}
