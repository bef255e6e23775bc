package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/preimage"
	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/internal/invariants"
	"github.com/lethedb/lethe/oplog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expiryscan"
	"github.com/lethedb/lethe/engine/namespace"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/usage"
	"github.com/lethedb/lethe/engine/validation"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/ttlindex"
)

// collMeta is a collection's persisted catalog entry.
type collMeta struct {
	ID      uint64             `bson:"id"`
	DB      string             `bson:"db"`
	Name    string             `bson:"name"`
	UUID    bson.Binary        `bson:"uuid"`
	Options bson.Raw           `bson:"options,omitempty"`
	Indexes []record.IndexMeta `bson:"indexes"`
	// Fence, on a store shared by several servers, names the catalog
	// change that holds the collection's writes off every server
	// (fence.go): the roster id of its server, a slash and a number.
	Fence string `bson:"fence,omitempty"`
	// CollatedID says the primary keys of the collection's documents are
	// their _id's keys under its default collation (collState.pkOf). It is
	// set at create, so that a collection stored before primary keys
	// followed the collation keeps its bytewise keys.
	CollatedID bool `bson:"collatedID,omitempty"`
}

// Collection is an open collection. Its state is replaced whole by catalog
// changes, so readers take one consistent snapshot of it without locks.
type Collection struct {
	// ddl is shared by writers and taken exclusively by catalog changes
	// that must not interleave with writes (index builds, drops).
	ddl    sync.RWMutex
	metaMu sync.Mutex
	state  atomic.Pointer[collState]
	// catalog is the engine's counter of installed states (catalogSeq),
	// and createdSeq the number of the collection's first state: a
	// transaction can tell a state installed after its start, and one
	// that is still as created.
	catalog    *atomic.Uint64
	createdSeq uint64

	reapCursor expiryscan.Cursor
	usage      usage.Counters
}

type collState struct {
	meta    collMeta
	indexes []*record.Index // secondary indexes that have entries
	ttl     ttlindex.Setting
	dateTTL []*record.Index // indexes with expireAfterSeconds on a date field
	// validator checks written documents; nil if the collection has none.
	validator *validation.Validator
	// preImages is changeStreamPreAndPostImages: updates and deletes
	// store the document's pre-image with their oplog entry.
	preImages bool
	// coll is the collection's default collation (create's collation);
	// nil is the simple one.
	coll *collation.Collator
	// idColl is the collation of the collection's _id index, under which
	// its primary keys are made: its default collation, as mongod gives
	// the _id index of a collection created with one; nil is bytewise.
	idColl  *collation.Collator
	dropped bool
	// renames counts the renames of the collection since it was opened:
	// a plan made before one is killed even if the collection has its old
	// name again (killedSince).
	renames uint64
	// seq is the engine's catalog counter when the state was installed
	// (setState).
	seq uint64
}

func (c *Collection) st() *collState { return c.state.Load() }

// setState installs the collection's state after a catalog change. A
// dropped collection stays dropped: its id is gone for good, and readers
// and writers that hold it rely on never seeing it come back.
func (c *Collection) setState(st *collState) {
	if old := c.state.Load(); invariants.Enabled && old != nil {
		invariants.Check(!old.dropped || st.dropped, "the dropped collection %s came back", old.ns())
		invariants.Check(old.meta.ID == st.meta.ID, "collection id changed from %d to %d", old.meta.ID, st.meta.ID)
	}
	st.seq = c.catalog.Add(1)
	if old := c.state.Load(); old == nil {
		c.createdSeq = st.seq
	}
	c.state.Store(st)
}

// newCollection opens a collection in state st.
func (e *Engine) newCollection(st *collState) *Collection {
	c := &Collection{catalog: &e.catalogSeq}
	c.setState(st)
	c.usage.Opened = e.clock.Now()
	return c
}

// NS returns "db.name".
func (s *collState) ns() string { return s.meta.DB + "." + s.meta.Name }

func newCollState(meta collMeta) (*collState, error) {
	st := &collState{meta: meta}
	// create and collMod refuse validators that do not compile; one stored
	// by a version that did not check stays unenforced, which loadCatalog
	// logs, rather than keeping the store from opening.
	st.validator, _ = validation.Compile(meta.Options)
	st.preImages = preimage.Enabled(meta.Options)
	st.coll = defaultCollator(meta.Options)
	if meta.CollatedID {
		st.idColl = st.coll
	}
	for _, im := range meta.Indexes {
		ix, err := record.CompileIndex(im)
		if err != nil {
			return nil, fmt.Errorf("engine: index %s of %s.%s: %w", im.Name, meta.DB, meta.Name, err)
		}
		if ix.IsTS() {
			st.ttl = ttlindex.Setting{Enabled: true, Default: *im.ExpireAfter}
			continue
		}
		if im.Building {
			// Maintained by writers, used by no plan until it is built.
			ix.Meta.Hidden = true
		}
		st.indexes = append(st.indexes, ix)
		if im.ExpireAfter != nil && !im.Building {
			st.dateTTL = append(st.dateTTL, ix)
		}
	}
	return st, nil
}

// changed is the state of the same collection after a catalog change that
// keeps its name (index builds and drops, collMod): plans made on st are
// killed only by what killedSince checks.
func (st *collState) changed(meta collMeta) (*collState, error) {
	nst, err := newCollState(meta)
	if err != nil {
		return nil, err
	}
	nst.renames = st.renames
	return nst, nil
}

func nsKey(db, name string) string { return db + "." + name }

func (e *Engine) loadCatalog(ctx context.Context) error {
	lo := record.CatalogCollPrefix()
	it, err := e.store.Iter(ctx, lo, record.PrefixEnd(lo), false)
	if err != nil {
		return fmt.Errorf("engine: read catalog: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var meta collMeta
		if err := bson.Unmarshal(it.Value(), &meta); err != nil {
			return fmt.Errorf("engine: catalog entry %q: %w", it.Key(), err)
		}
		st, err := newCollState(meta)
		if err != nil {
			return err
		}
		if _, err := validation.Compile(meta.Options); err != nil {
			e.log.Warn("collection validator does not compile and is not enforced",
				zap.String("namespace", st.ns()), zap.Error(err))
		}
		e.colls[nsKey(meta.DB, meta.Name)] = e.newCollection(st)
	}
	return it.Error()
}

// allocIDs hands out n fresh collection or index ids, the first of which
// it returns. They come from the stored sequence, read and advanced under
// its key lock in a short transaction of its own: the sequence never goes
// back, even when the catalog changes that take ids commit out of order,
// and front-ends sharing one store never hand out the same id. An id whose
// catalog change then fails is simply never used.
func (e *Engine) allocIDs(ctx context.Context, n int) (uint64, error) {
	tx, err := e.beginPlain(ctx, false)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := tx.LockKeys(ctx, kv.LockOptions{}, record.SeqKey()); err != nil {
		return 0, fmt.Errorf("engine: lock the id sequence: %w", err)
	}
	var seq uint64
	switch v, err := tx.Get(ctx, record.SeqKey()); {
	case err == nil && len(v) == 8:
		seq = binary.BigEndian.Uint64(v)
	case err == nil:
		return 0, fmt.Errorf("engine: id sequence of %d bytes", len(v))
	case err != kv.ErrNotFound:
		return 0, fmt.Errorf("engine: read the id sequence: %w", err)
	}
	if err := tx.Set(record.SeqKey(), binary.BigEndian.AppendUint64(nil, seq+uint64(n))); err != nil {
		return 0, err
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return 0, fmt.Errorf("engine: advance the id sequence: %w", err)
	}
	return seq + 1, nil
}

func putMeta(tx kv.Txn, meta *collMeta) error {
	raw, err := bson.Marshal(meta)
	if err != nil {
		return fmt.Errorf("engine: encode catalog entry: %w", err)
	}
	return tx.Set(record.CatalogKey(meta.DB, meta.Name), raw)
}

// collection returns the open collection, or nil.
func (e *Engine) collection(db, name string) *Collection {
	e.mu.RLock()
	c := e.colls[nsKey(db, name)]
	e.mu.RUnlock()
	if c == nil {
		c = e.lookupStored(context.TODO(), db, name)
	}
	return c
}

// CollectionExists reports whether db.name exists.
func (e *Engine) CollectionExists(ctx context.Context, db, name string) bool {
	return e.collection(db, name) != nil
}

// CreateOptions are the options of the create command that Lethe keeps.
type CreateOptions struct {
	Raw bson.Raw // options as given, reported by listCollections
}

// CreateCollection creates db.name. It fails with NamespaceExists if the
// collection exists.
func (e *Engine) CreateCollection(ctx context.Context, db, name string, opts CreateOptions) error {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	if err := namespace.Validate(db, name); err != nil {
		return err
	}
	t := transactionOf(ctx)
	if t != nil && t.tx == nil {
		return mongoerr.New(mongoerr.InvalidOptions, "a write cannot run under read concern snapshot outside a transaction")
	}
	raw, err := normalizeCreateOptions(opts.Raw)
	if err != nil {
		return err
	}
	c, created, err := e.ensureCollection(db, name, raw)
	if created && t != nil {
		// MongoDB 4.4+ creates collections in transactions; the abort
		// drops it again if it is still empty.
		t.noteCreated(c, true)
		if _, err := t.stateOf(c); err != nil {
			return err
		}
	}
	if me, ok := mongoerr.As(err); ok && me.Code == mongoerr.CommandNotSupportedOnView {
		return mongoerr.New(mongoerr.NamespaceExists, "namespace %s.%s already exists, but is a view", db, name)
	}
	if err != nil {
		return err
	}
	if !created {
		return mongoerr.New(mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, name)
	}
	return nil
}

// writeLock returns db.name share-locked against catalog changes, creating
// it first when create is set; nil (and no lock) when it does not exist, and
// CommandNotSupportedOnView when it is a view. A collection dropped while the caller waited for the lock is looked up
// again, so that no write lands in a dropped collection's key range.
//
// In a transaction (WithTransaction) the wait for the lock is bounded
// (Transaction.lockCollection) and the collection's state must be one the
// transaction can use (Transaction.stateOf).
func (e *Engine) writeLock(ctx context.Context, db, name string, create bool) (*Collection, error) {
	if e.isOplogNS(db, name) {
		return nil, errOplogWrite()
	}
	t := transactionOf(ctx)
	if t != nil && t.tx == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "a write cannot run under read concern snapshot outside a transaction")
	}
	for {
		c := e.collection(db, name)
		if c == nil {
			// A name is never both; ensureCollection checks again under
			// e.mu.
			if _, ok := e.View(ctx, db, name); ok {
				return nil, errIsView(db, name)
			}
			if !create {
				return nil, nil
			}
			var err error
			var created bool
			if c, created, err = e.ensureCollection(db, name, nil); err != nil {
				return nil, err
			}
			if created && t != nil {
				t.noteCreated(c, false)
			}
		}
		if t == nil {
			c.ddl.RLock()
		} else if err := t.lockCollection(ctx, c); err != nil {
			return nil, err
		}
		if st := c.st(); !st.dropped && st.meta.Fence != "" {
			// A catalog change on another server holds the
			// collection's writes off (fence.go).
			c.ddl.RUnlock()
			if t != nil {
				return nil, t.lockTimeout(c)
			}
			if err := e.waitReplaced(ctx, []*Collection{c}, st); err != nil {
				return nil, err
			}
			continue
		}
		if !c.st().dropped {
			if t != nil {
				if _, err := t.stateOf(c); err != nil {
					c.ddl.RUnlock()
					return nil, err
				}
			}
			return c, nil
		}
		c.ddl.RUnlock()
	}
}

// ensureCollection returns db.name, creating it if needed.
func (e *Engine) ensureCollection(db, name string, options bson.Raw) (*Collection, bool, error) {
	if c := e.collection(db, name); c != nil {
		return c, false, nil
	}
	if err := namespace.Validate(db, name); err != nil {
		return nil, false, err
	}
	if e.isOplogNS(db, name) {
		return nil, false, errOplogWrite()
	}
	if _, err := validation.Compile(options); err != nil {
		return nil, false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.colls[nsKey(db, name)]; c != nil {
		return c, false, nil
	}
	if e.isViewLocked(db, name) {
		return nil, false, errIsView(db, name)
	}
	ctx := context.Background()
	tx, err := e.beginCatalog(ctx, false)
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback()
	if tx.version != 0 {
		// Another server may have created it since this one last looked:
		// under the catalog's version lock the store has the last word.
		switch meta, _, err := readMeta(ctx, tx, db, name); {
		case err == nil:
			if !e.adoptableLocked(meta.ID) {
				// A drop here has not yet committed: the name is not
				// free yet.
				return nil, false, mongoerr.New(mongoerr.ConflictingOperationInProgress, "%s.%s is being dropped; try again", db, name)
			}
			st, err := newCollState(meta)
			if err != nil {
				return nil, false, err
			}
			c := e.newCollection(st)
			e.colls[nsKey(db, name)] = c
			return c, false, nil
		case err != kv.ErrNotFound:
			return nil, false, fmt.Errorf("engine: read the catalog entry of %s.%s: %w", db, name, err)
		}
	}
	id, err := e.allocIDs(ctx, 1)
	if err != nil {
		return nil, false, err
	}
	meta := collMeta{ID: id, DB: db, Name: name, UUID: newUUID(), Options: options}
	meta.CollatedID = defaultCollator(options) != nil
	st, err := newCollState(meta)
	if err != nil {
		return nil, false, err
	}
	if err := putMeta(tx, &meta); err != nil {
		return nil, false, err
	}
	if err := e.commitLogged(ctx, tx, kv.Sync, createEntry(&meta)); err != nil {
		return nil, false, fmt.Errorf("engine: create %s.%s: %w", db, name, err)
	}
	c := e.newCollection(st)
	e.colls[nsKey(db, name)] = c
	return c, true, nil
}

func newUUID() bson.Binary {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u[:]}
}

// DropCollection removes db.name with its documents and indexes. It reports
// whether the collection existed. Dropping system.views drops every view of
// db.
func (e *Engine) DropCollection(ctx context.Context, db, name string) (bool, error) {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	if name == ViewsCollection {
		return e.dropViewsCollection(db)
	}
	return e.dropCollectionIf(ctx, db, name, func(*collState) bool { return true })
}

func (e *Engine) dropCollection(db, name string) (bool, error) {
	if err := e.writable(); err != nil {
		return false, err
	}
	e.mu.Lock()
	c := e.colls[nsKey(db, name)]
	if c == nil {
		e.mu.Unlock()
		return false, nil
	}
	e.forgetLocked(nsKey(db, name), c)
	e.mu.Unlock()

	c.ddl.Lock()
	defer c.ddl.Unlock()
	return e.commitDrop(context.Background(), c, db, name)
}

// dropCollectionIf drops db.name if drop says so of its state, checked
// under the collection's exclusive ddl lock, when no write is under way.
func (e *Engine) dropCollectionIf(ctx context.Context, db, name string, drop func(*collState) bool) (bool, error) {
	if err := e.writable(); err != nil {
		return false, err
	}
	c := e.collection(db, name)
	if c == nil {
		return false, nil
	}
	h, err := e.lockForChange(ctx, c)
	if err != nil {
		return false, err
	}
	defer h.unlock()
	if c.st().dropped || !drop(c.st()) {
		return false, nil
	}
	e.mu.Lock()
	if e.colls[nsKey(db, name)] != c {
		e.mu.Unlock()
		return false, nil
	}
	e.forgetLocked(nsKey(db, name), c)
	e.mu.Unlock()
	return e.commitDrop(ctx, c, db, name)
}

// commitDrop stores the drop of c, gone from the map of open collections,
// whose ddl lock the caller holds exclusively, and reclaims its keys.
func (e *Engine) commitDrop(ctx context.Context, c *Collection, db, name string) (bool, error) {
	st := c.st()
	tx, err := e.beginCatalog(ctx, false)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	// Under the exclusive ddl lock a drop needs only that the id is the
	// one stored: another server's change of the entry goes with it.
	if _, _, err := e.storedMeta(ctx, tx, st); err != nil {
		return false, err
	}
	if err := tx.Delete(record.CatalogKey(db, name)); err != nil {
		return false, err
	}
	ranges := collectionRanges(st)
	if err := e.recordDrop(tx, ranges); err != nil {
		return false, err
	}
	ent := cmdEntry(db, st.meta.UUID.Data, bson.D{{Key: "drop", Value: name}}, nil)
	if err := e.commitLogged(ctx, tx, kv.Sync, ent); err != nil {
		return false, fmt.Errorf("engine: drop %s.%s: %w", db, name, err)
	}
	dropped := *st
	dropped.dropped = true
	c.setState(&dropped)
	e.reclaimDropped(ctx, ranges)
	return true, nil
}

// collectionRanges are the key ranges of a collection's documents, expiry
// entries and indexes.
func collectionRanges(st *collState) []reclaim.Range {
	lo, hi := record.DocRange(st.meta.ID)
	out := []reclaim.Range{{Lo: lo, Hi: hi}}
	lo, hi = ttlindex.CollRange(st.meta.ID)
	out = append(out, reclaim.Range{Lo: lo, Hi: hi})
	for _, ix := range st.indexes {
		lo, hi := record.IndexRange(ix.Meta.ID)
		out = append(out, reclaim.Range{Lo: lo, Hi: hi})
	}
	return out
}

// DropDatabase drops every collection of db.
func (e *Engine) DropDatabase(ctx context.Context, db string) error {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	names := e.CollectionNames(ctx, db)
	for _, name := range names {
		if _, err := e.DropCollection(ctx, db, name); err != nil {
			return err
		}
	}
	if len(names) == 0 || e.oplog == nil {
		return nil
	}
	// As in MongoDB, the drops of the collections come first.
	tx, err := e.beginCatalog(ctx, false)
	if err != nil {
		return err
	}
	return e.commitLogged(ctx, tx, kv.Sync, cmdEntry(db, nil, bson.D{{Key: "dropDatabase", Value: int32(1)}}, nil))
}

// RenameCollection moves from to to, keeping documents and indexes. With
// dropTarget an existing target is dropped first.
func (e *Engine) RenameCollection(ctx context.Context, fromDB, from, toDB, to string, dropTarget bool) error {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	if err := namespace.Validate(toDB, to); err != nil {
		return err
	}
	if fromDB == toDB && from == to {
		return mongoerr.New(mongoerr.IllegalOperation, "Can't rename a collection to itself")
	}
	if from == ViewsCollection || to == ViewsCollection {
		return mongoerr.New(mongoerr.IllegalOperation, "renaming system.views collection or renaming to system.views is not allowed")
	}
	if _, ok := e.View(ctx, fromDB, from); ok {
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "cannot rename view: %s.%s", fromDB, from)
	}
	if _, ok := e.View(ctx, toDB, to); ok {
		return mongoerr.New(mongoerr.NamespaceExists, "a view already exists with that name: %s.%s", toDB, to)
	}
	if e.collection(fromDB, from) == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	if e.collection(toDB, to) != nil {
		if !dropTarget {
			return mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
		}
		return e.renameReplacing(ctx, fromDB, from, toDB, to)
	}
	// The collection's ddl lock comes before engine.mu (see the package
	// doc); the map is checked again under both.
	c := e.collection(fromDB, from)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	h, err := e.lockForChange(ctx, c)
	if err != nil {
		return err
	}
	defer h.unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.colls[nsKey(fromDB, from)] != c {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	if e.colls[nsKey(toDB, to)] != nil {
		return mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
	}
	if e.isViewLocked(toDB, to) {
		return mongoerr.New(mongoerr.NamespaceExists, "a view already exists with that name: %s.%s", toDB, to)
	}
	if _, err := e.commitRename(ctx, c, nil, fromDB, from, toDB, to); err != nil {
		return fmt.Errorf("engine: rename: %w", err)
	}
	return nil
}

// CollectionInfo describes a collection for listCollections.
type CollectionInfo struct {
	Name    string
	UUID    bson.Binary
	Options bson.Raw
}

// CollectionNames lists db's collections in name order.
func (e *Engine) CollectionNames(ctx context.Context, db string) []string {
	infos := e.Collections(ctx, db)
	names := make([]string, len(infos))
	for i, ci := range infos {
		names[i] = ci.Name
	}
	return names
}

// Collections lists db's collections in name order.
func (e *Engine) Collections(ctx context.Context, db string) []CollectionInfo {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []CollectionInfo
	for _, c := range e.colls {
		st := c.st()
		if st.meta.DB == db {
			out = append(out, CollectionInfo{Name: st.meta.Name, UUID: st.meta.UUID, Options: st.meta.Options})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Databases lists the databases that have at least one collection.
func (e *Engine) Databases(ctx context.Context) []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for _, c := range e.colls {
		db := c.st().meta.DB
		if !seen[db] {
			seen[db] = true
			out = append(out, db)
		}
	}
	sort.Strings(out)
	return out
}

// openCollections snapshots every open collection.
func (e *Engine) openCollections() []*Collection {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]*Collection, 0, len(e.colls))
	for _, c := range e.colls {
		out = append(out, c)
	}
	return out
}

// ValidateNamespace checks database and collection names as MongoDB does
// (namespace.Validate).
func ValidateNamespace(db, coll string) error { return namespace.Validate(db, coll) }

// ValidateDBName checks a database name as MongoDB does
// (namespace.ValidateDB).
func ValidateDBName(db string) error { return namespace.ValidateDB(db) }

// CollectionValidation is what a collMod changes of a collection's
// validation; nil fields stay as they are.
type CollectionValidation struct {
	Validator bson.Raw
	Level     *string
	Action    *string
}

// SetValidation changes db.coll's validator, validationLevel or
// validationAction (collMod). Later writes are checked under the new
// settings; documents already stored are not.
func (e *Engine) SetValidation(ctx context.Context, db, coll string, ch CollectionValidation) error {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	entry := bson.D{{Key: "collMod", Value: coll}}
	if ch.Validator != nil {
		entry = append(entry, bson.E{Key: "validator", Value: ch.Validator})
	}
	if ch.Level != nil {
		entry = append(entry, bson.E{Key: "validationLevel", Value: *ch.Level})
	}
	if ch.Action != nil {
		entry = append(entry, bson.E{Key: "validationAction", Value: *ch.Action})
	}
	return e.modifyOptions(ctx, db, coll, func(opts bson.D) (bson.D, error) {
		set := func(key string, v any) {
			for i := range opts {
				if opts[i].Key == key {
					opts[i].Value = v
					return
				}
			}
			opts = append(opts, bson.E{Key: key, Value: v})
		}
		if ch.Validator != nil {
			set("validator", ch.Validator)
		}
		if ch.Level != nil {
			set("validationLevel", *ch.Level)
		}
		if ch.Action != nil {
			set("validationAction", *ch.Action)
		}
		// Compiling here reports a bad validator before anything changes.
		raw, err := bson.Marshal(opts)
		if err != nil {
			return nil, fmt.Errorf("engine: collection options: %w", err)
		}
		if _, err := validation.Compile(raw); err != nil {
			return nil, err
		}
		return opts, nil
	}, entry)
}

// SetPreAndPostImages is collMod's changeStreamPreAndPostImages. As in
// MongoDB the option is stored, and listed, only while enabled.
func (e *Engine) SetPreAndPostImages(ctx context.Context, db, coll string, enabled bool) error {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	entry := bson.D{{Key: "collMod", Value: coll}, {Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: enabled}}}}
	return e.modifyOptions(ctx, db, coll, func(opts bson.D) (bson.D, error) {
		kept := opts[:0]
		for _, o := range opts {
			if o.Key != PreImagesOption {
				kept = append(kept, o)
			}
		}
		if enabled {
			kept = append(kept, bson.E{Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: true}}})
		}
		return kept, nil
	}, entry)
}

// modifyOptions is collMod of db.coll's stored options: change gets them
// decoded and returns them as they are to be, and entry is the collMod
// the oplog records.
func (e *Engine) modifyOptions(ctx context.Context, db, coll string, change func(opts bson.D) (bson.D, error), entry bson.D) error {
	c := e.collection(db, coll)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, coll)
	}
	h, err := e.lockForChange(ctx, c)
	if err != nil {
		return err
	}
	defer h.unlock()
	return e.updateMeta(ctx, c, true, func(meta *collMeta, _ kv.Txn) error {
		var opts bson.D
		if len(meta.Options) > 0 {
			if err := bson.Unmarshal(meta.Options, &opts); err != nil {
				return fmt.Errorf("engine: collection options of %s.%s: %w", db, coll, err)
			}
		}
		opts, err := change(opts)
		if err != nil {
			return err
		}
		if len(opts) == 0 {
			meta.Options = nil
			return nil
		}
		raw, err := bson.Marshal(opts)
		if err != nil {
			return fmt.Errorf("engine: collection options: %w", err)
		}
		meta.Options = raw
		return nil
	}, func(old, _ *collMeta) []oplog.Entry {
		return cmdEntry(db, old.UUID.Data, entry, collModO2(old, nil))
	})
}
