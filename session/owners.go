package session

// What the registry knows of whose sessions it keeps. A session's key holds
// its owner's 32-byte digest; the registry keeps the digest once, in a
// table, and each entry only its index, so that an entry costs a few dozen
// bytes and a million sessions fit in tens of MiB. The same table counts the
// sessions each client started, to bound them (Options.MaxPerClient).

// uidSlot is an interned user digest and the number of live sessions
// naming it.
type uidSlot struct {
	uid  UID
	name string // the owner's name, "user@db", once a session of its own told it
	refs int
}

// clientSlot is a client and the number of live sessions it started.
type clientSlot struct {
	name string
	n    int
}

// owners interns user digests and counts sessions by client. Its slots are
// freed when their last session ends, so that clients naming ever new
// digests or coming from ever new addresses cost nothing once their
// sessions are gone. The registry guards it with its own lock.
type owners struct {
	uidIndex    map[UID]uint32
	uids        []uidSlot
	freeUIDs    []uint32
	clientIndex map[string]uint32
	clients     []clientSlot
	freeClients []uint32
	n           int // live sessions in all
}

func newOwners() owners {
	return owners{uidIndex: make(map[UID]uint32), clientIndex: make(map[string]uint32)}
}

// uid returns the index of uid, if interned.
func (o *owners) uid(uid UID) (uint32, bool) {
	i, ok := o.uidIndex[uid]
	return i, ok
}

// count returns the sessions client started.
func (o *owners) count(client string) int {
	if i, ok := o.clientIndex[client]; ok {
		return o.clients[i].n
	}
	return 0
}

// add counts a new session of uid, started by client, and returns the
// indexes its entry keeps.
func (o *owners) add(uid UID, user, client string) (uidIdx, clientIdx uint32) {
	uidIdx, ok := o.uidIndex[uid]
	if !ok {
		uidIdx = alloc(&o.uids, &o.freeUIDs, uidSlot{uid: uid})
		o.uidIndex[uid] = uidIdx
	}
	u := &o.uids[uidIdx]
	u.refs++
	if u.name == "" {
		u.name = user
	}
	clientIdx, ok = o.clientIndex[client]
	if !ok {
		clientIdx = alloc(&o.clients, &o.freeClients, clientSlot{name: client})
		o.clientIndex[client] = clientIdx
	}
	o.clients[clientIdx].n++
	o.n++
	return uidIdx, clientIdx
}

// remove uncounts a session, freeing the slots it was the last of.
func (o *owners) remove(uidIdx, clientIdx uint32) {
	o.n--
	u := &o.uids[uidIdx]
	if u.refs--; u.refs == 0 {
		delete(o.uidIndex, u.uid)
		*u = uidSlot{}
		o.freeUIDs = append(o.freeUIDs, uidIdx)
	}
	c := &o.clients[clientIdx]
	if c.n--; c.n == 0 {
		delete(o.clientIndex, c.name)
		*c = clientSlot{}
		o.freeClients = append(o.freeClients, clientIdx)
	}
}

// alloc puts v in a free slot of table, or a new one, and returns its index.
func alloc[T any](table *[]T, free *[]uint32, v T) uint32 {
	if n := len(*free); n > 0 {
		i := (*free)[n-1]
		*free = (*free)[:n-1]
		(*table)[i] = v
		return i
	}
	*table = append(*table, v)
	return uint32(len(*table) - 1)
}
