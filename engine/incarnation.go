package engine

// Incarnation is one life of a collection, from its creation or last
// rename to its drop or next rename: what a query plan was made for. The
// zero Incarnation is of no collection and never ends.
type Incarnation struct {
	c      *Collection
	opened *collState
}

// Check is nil while the incarnation lasts, and QueryPlanKilled once the
// collection has been dropped or renamed, even if a collection of the same
// name exists again.
func (in Incarnation) Check() error {
	if in.c == nil {
		return nil
	}
	return in.c.st().killedSince(in.opened, nil)
}

// incarnation is the collection the cursor reads, as it found it.
func (c *Cursor) incarnation() Incarnation {
	if c.coll == nil {
		return Incarnation{}
	}
	return Incarnation{c: c.coll, opened: c.opened}
}
