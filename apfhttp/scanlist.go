package apfhttp

// This file gives the grammar its meaning. The states of scan.go and
// scanstring.go call it at four points: whether the text of the string about
// to be read matters (capturesKey, capturesValue), when a key has been
// read (keyRead), when a value begins (valueBegins) and when it ends
// (valueEnds). Only the outer three levels mean anything: the top-level
// object, its members, and the items of the list's array and the members
// of metadata; everything deeper is only checked to be valid JSON.

// Depths that carry meaning: the number of containers open around a value
// or key.
const (
	inList   = 1 // a member of the top-level object
	inMember = 2 // inside a member's value: an item, or a metadata member
)

// member is the member of the top-level object being read, as its key
// names it.
type member uint8

const (
	memberOther member = iota
	memberKind
	memberItems
	memberRows
	memberMetadata
)

// metaMember is the member of the metadata object being read.
type metaMember uint8

const (
	metaOther metaMember = iota
	metaRemaining
	metaContinue
)

// container is what the container open at depth inMember is.
type container uint8

const (
	containerOther container = iota
	containerItems
	containerRows
	containerMetadata
)

// arrayCount is the count of one array that may be the list's.
type arrayCount struct {
	present      bool // the member is an array, or null
	items, bytes int64
}

// listState is what the body has said about the list so far. Each member
// of the top-level object (and of metadata) sets the fields it speaks for
// anew, so that a repeated member replaces what the earlier one said.
type listState struct {
	member     member
	metaMember metaMember
	container  container
	itemStart  int64 // where the item being read began

	kindTable    bool
	items, rows  arrayCount
	remaining    int64
	hasRemaining bool
	hasContinue  bool
}

// listCounts is what a list response says about its items.
type listCounts struct {
	// Items is the number of elements of the list's array, Bytes the
	// bytes they span (each from its first byte to its last).
	Items, Bytes int64
	// Remaining is metadata.remainingItemCount, when HasRemaining.
	Remaining    int64
	HasRemaining bool
	// Continue says metadata.continue is a non-empty string.
	Continue bool
	// Table says the array counted is the rows of a Table.
	Table bool
}

// result reports what the body read so far says, and whether it is a
// whole list: an object with an "items" array (or, when its kind is
// "Table", a "rows" array), a null array counting as empty.
func (s *listScanner) result() (listCounts, bool) {
	l := &s.list
	if s.state != stDone {
		return listCounts{}, false
	}
	array, table := l.items, false
	if l.kindTable && l.rows.present {
		array, table = l.rows, true
	}
	if !array.present {
		return listCounts{}, false
	}
	r := listCounts{Items: array.items, Bytes: array.bytes, Continue: l.hasContinue, Table: table}
	if l.hasRemaining {
		r.Remaining, r.HasRemaining = l.remaining, true
	}
	return r, true
}

// capturesKey reports whether the key about to be read names a member
// that may matter: one of the top-level object or of metadata.
func (s *listScanner) capturesKey() bool {
	d := s.nest.depth
	return d == inList || (d == inMember && s.list.container == containerMetadata)
}

// capturesValue reports whether the text of the string value about to be
// read matters: the kind, or metadata.continue.
func (s *listScanner) capturesValue() bool {
	switch l := &s.list; s.nest.depth {
	case inList:
		return l.member == memberKind
	case inMember:
		return l.container == containerMetadata && l.metaMember == metaContinue
	}
	return false
}

// keyRead notes which member a key names. Only the keys that may matter
// are captured (capturesKey): those of the top-level object and of
// metadata.
func (s *listScanner) keyRead() {
	switch {
	case !s.str.capture:
	case s.nest.depth == inList:
		s.list.listKey(&s.str)
	default:
		s.list.metadataKey(&s.str)
	}
}

// listKey notes the member of the top-level object that key names, and
// forgets what an earlier member of that name said.
func (l *listState) listKey(key *stringScan) {
	l.member = memberOther
	switch {
	case key.is("items"):
		l.member, l.items = memberItems, arrayCount{}
	case key.is("rows"):
		l.member, l.rows = memberRows, arrayCount{}
	case key.is("kind"):
		l.member, l.kindTable = memberKind, false
	case key.is("metadata"):
		l.member, l.hasRemaining, l.hasContinue = memberMetadata, false, false
	}
}

// metadataKey notes the member of metadata that key names, and forgets
// what an earlier member of that name said.
func (l *listState) metadataKey(key *stringScan) {
	l.metaMember = metaOther
	switch {
	case key.is("remainingItemCount"):
		l.metaMember, l.hasRemaining = metaRemaining, false
	case key.is("continue"):
		l.metaMember, l.hasContinue = metaContinue, false
	}
}

// valueBegins notes a value whose first byte b is at position at: the
// top-level object, a member of it (an array that may be the list's, or
// the metadata), or an item of the list's array. It reports false when
// the value cannot be a list: a top-level value other than an object.
func (s *listScanner) valueBegins(b byte, at int64) bool {
	// Most values are deeper and mean nothing: they cost one comparison.
	return s.nest.depth > inMember || s.shallowValueBegins(b, at)
}

// shallowValueBegins is valueBegins for the values that mean something.
func (s *listScanner) shallowValueBegins(b byte, at int64) bool {
	l := &s.list
	switch s.nest.depth {
	case 0:
		return b == '{'
	case inList:
		l.container = l.memberContainer(b)
		switch l.container {
		case containerItems:
			l.items = arrayCount{present: true}
		case containerRows:
			l.rows = arrayCount{present: true}
		}
	case inMember:
		if a := l.counting(); a != nil {
			a.items++
			l.itemStart = at
		}
	}
	return true
}

// memberContainer is what the value of the current top-level member is,
// when its first byte is b.
func (l *listState) memberContainer(b byte) container {
	switch {
	case b == '[' && l.member == memberItems:
		return containerItems
	case b == '[' && l.member == memberRows:
		return containerRows
	case b == '{' && l.member == memberMetadata:
		return containerMetadata
	}
	return containerOther
}

// counting returns the array whose items are being read, if the container
// open at depth inMember may be the list's array.
func (l *listState) counting() *arrayCount {
	switch l.container {
	case containerItems:
		return &l.items
	case containerRows:
		return &l.rows
	}
	return nil
}

// valueEnds notes the end of a value of the kind given; after is the
// position just past its last byte.
func (s *listScanner) valueEnds(after int64, kind valueKind) {
	if s.nest.depth <= inMember { // deeper values mean nothing
		s.shallowValueEnds(after, kind)
	}
}

// shallowValueEnds is valueEnds for the values that mean something: the
// top-level object, its members, and the items and members of those.
func (s *listScanner) shallowValueEnds(after int64, kind valueKind) {
	l := &s.list
	switch s.nest.depth {
	case 0: // the top-level object: whitespace only may follow
		s.state = stDone
	case inList:
		l.memberEnds(kind, &s.str)
	case inMember:
		if a := l.counting(); a != nil {
			a.bytes += after - l.itemStart
		} else if l.container == containerMetadata {
			l.metaMemberEnds(kind, &s.str, &s.num)
		}
	}
}

// memberEnds notes the end of a top-level member's value: the kind's
// string, or a null list.
func (l *listState) memberEnds(kind valueKind, str *stringScan) {
	switch l.member {
	case memberKind:
		l.kindTable = kind == kindString && str.is("Table")
	case memberItems:
		l.items.present = l.items.present || kind == kindNull
	case memberRows:
		l.rows.present = l.rows.present || kind == kindNull
	}
}

// metaMemberEnds notes the end of a metadata member's value: the number of
// remaining items, or the continue token.
func (l *listState) metaMemberEnds(kind valueKind, str *stringScan, num *numberScan) {
	switch {
	case l.metaMember == metaRemaining && kind == kindNumber:
		l.remaining, l.hasRemaining = num.count()
	case l.metaMember == metaContinue && kind == kindString:
		l.hasContinue = str.n > 0
	}
}
