package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// IndexSpec is one index of a createIndexes command, as given.
type IndexSpec bson.Raw

// CreateIndexesResult is the createIndexes reply's counts.
type CreateIndexesResult struct {
	Before, After     int
	CreatedCollection bool
	Note              string
}

// indexOptions lists the index specification fields MongoDB accepts on
// the index types Lethe has; others are refused as MongoDB refuses unknown
// ones. Options of other index types (text, 2d, 2dsphere, wildcard) are
// accepted where MongoDB accepts them on any index, and kept.
var indexOptions = map[string]bool{
	"key": true, "name": true, "v": true, "ns": true, "unique": true, "sparse": true,
	"partialFilterExpression": true, "expireAfterSeconds": true, "background": true,
	"hidden": true, "collation": true, "storageEngine": true, "dropDups": true,
	"prepareUnique": true, "weights": true, "default_language": true, "language_override": true,
	"textIndexVersion": true, "2dsphereIndexVersion": true, "bits": true, "min": true, "max": true,
	"coarsestIndexedLevel": true, "finestIndexedLevel": true, "wildcardProjection": true,
}

// IsIndexOption reports whether MongoDB accepts name as a field of an index
// specification, for createIndexes's ignoreUnknownIndexOptions.
func IsIndexOption(name string) bool { return indexOptions[name] }

// maxIndexFields is the most fields a compound index may have.
const maxIndexFields = 32

// maxKeyPatternSize is the largest key pattern MongoDB accepts, in bytes.
const maxKeyPatternSize = 2048

// parseIndexSpec validates a spec into catalog form (without an id). The
// options that listIndexes echoes and the catalog does not model are kept
// in Extra, in the order given.
func parseIndexSpec(spec bson.Raw) (record.IndexMeta, error) {
	var im record.IndexMeta
	elems, err := spec.Elements()
	if err != nil {
		return im, mongoerr.New(mongoerr.InvalidBSON, "invalid index specification: %v", err)
	}
	var extra bson.D
	hasName := false
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		if !indexOptions[k] {
			return im, mongoerr.New(mongoerr.InvalidIndexSpecificationOption, "The field '%s' is not valid for an index specification. Specification: %s", k, spec.String())
		}
		switch k {
		case "key":
			doc, ok := v.DocumentOK()
			if !ok {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field 'key' must be an object, but got %s", typeName(v.Type))
			}
			im.Key = bytes.Clone(doc)
			continue
		case "name":
			name, ok := v.StringValueOK()
			if !ok {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field 'name' must be a string, but got %s", typeName(v.Type))
			}
			im.Name, hasName = name, true
			continue
		case "v":
			n, ok := v.AsFloat64OK()
			if !ok {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field 'v' must be a number, but got %s", typeName(v.Type))
			}
			if n != 1 && n != 2 {
				return im, mongoerr.New(mongoerr.CannotCreateIndex, "Invalid index specification %s; cannot create an index with v=%v", spec.String(), n)
			}
			im.Version = int32(n)
			continue
		case "unique", "sparse", "background", "dropDups", "prepareUnique":
			if _, ok := v.AsFloat64OK(); !ok && v.Type != bson.TypeBoolean {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field '%s has value %s, which is not convertible to bool", k, v.String())
			}
			switch k {
			case "unique":
				im.Unique = truthy(v)
				continue // listed as unique: true, or not at all
			case "sparse":
				im.Sparse = truthy(v)
			case "prepareUnique":
				if truthy(v) {
					return im, mongoerr.New(mongoerr.CannotCreateIndex, "the index option 'prepareUnique' is not supported")
				}
				continue
			case "dropDups":
				continue // ignored and dropped, as MongoDB does
			}
		case "hidden":
			if v.Type != bson.TypeBoolean {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field 'hidden' must be a bool, but got %s", typeName(v.Type))
			}
			im.Hidden = v.Boolean()
			continue // listed as hidden: true, or not at all
		case "ns":
			continue // dropped since MongoDB 4.4
		case "partialFilterExpression":
			doc, ok := v.DocumentOK()
			if !ok {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field 'partialFilterExpression' must be an object, but got %s", typeName(v.Type))
			}
			if _, err := query.Compile(doc); err != nil {
				return im, err
			}
			im.Partial = bytes.Clone(doc)
		case "collation":
			doc, ok := v.DocumentOK()
			if !ok {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field 'collation' must be an object, but got %s", typeName(v.Type))
			}
			norm, err := ParseCollation(doc)
			if err != nil {
				return im, err
			}
			if norm != nil {
				// Kept normalised, as listIndexes shows it; the simple
				// collation is no collation.
				extra = append(extra, bson.E{Key: k, Value: norm})
			}
			continue
		case "storageEngine":
			if _, ok := v.DocumentOK(); !ok {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field 'storageEngine' must be an object, but got %s", typeName(v.Type))
			}
		case "default_language", "language_override":
			if v.Type != bson.TypeString {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field '%s' must be a string, but got %s", k, typeName(v.Type))
			}
		case "textIndexVersion", "2dsphereIndexVersion", "bits", "min", "max", "coarsestIndexedLevel", "finestIndexedLevel":
			if _, ok := v.AsFloat64OK(); !ok {
				return im, mongoerr.New(mongoerr.TypeMismatch, "The field '%s' must be a number, but got %s", k, typeName(v.Type))
			}
		case "weights":
			if !isTextSpec(spec) {
				return im, mongoerr.New(mongoerr.CannotCreateIndex, "Invalid index specification %s; the field 'weights' can only be specified with text indexes", spec.String())
			}
		case "wildcardProjection":
			return im, mongoerr.New(mongoerr.BadValue, "The field 'wildcardProjection' is only allowed in 'wildcard' indexes")
		}
		extra = append(extra, bson.E{Key: k, Value: v})
	}
	if im.Key == nil {
		return im, mongoerr.New(mongoerr.FailedToParse, "The 'key' field is a required property of an index specification")
	}
	given := im.Key
	if extra, err = normalizeText(&im, spec, extra); err != nil {
		return im, err
	}
	if err := checkKeyPattern(im.Key); err != nil {
		return im, err
	}
	if err := checkKindOptions(im); err != nil {
		return im, err
	}
	keys, _ := im.Key.Elements()
	if !hasName {
		im.Name = defaultIndexName(mustElems(given))
	} else if im.Name == "" {
		return im, mongoerr.New(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: index name cannot be empty", spec.String())
	}
	if v, err := spec.LookupErr("expireAfterSeconds"); err == nil {
		n, err := parseExpireAfter(keys, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
		if err != nil {
			return im, err
		}
		im.ExpireAfter = &n
	}
	if im.Version == 0 {
		im.Version = 2
	}
	extra = geoSpecDefaults(keys, extra)
	if extra != nil {
		if im.Extra, err = bson.Marshal(extra); err != nil {
			return im, fmt.Errorf("engine: index options: %w", err)
		}
	} else {
		im.Extra = emptyDoc
	}
	if _, err := record.CompileIndex(im); err != nil {
		return im, err // a geo index's options
	}
	return im, nil
}

var emptyDoc = bson.Raw(bsoncore.NewDocumentBuilder().Build())

// checkKeyPattern validates an index key pattern as MongoDB does, for the
// index types Lethe has.
func checkKeyPattern(key bson.Raw) error {
	if len(key) > maxKeyPatternSize {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Index key pattern too large.")
	}
	keys, err := key.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid index key pattern: %v", err)
	}
	if len(keys) == 0 {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot be empty.")
	}
	seen := make(map[string]bool, len(keys))
	for _, kel := range keys {
		if seen[kel.Key()] {
			return mongoerr.New(mongoerr.BadValue, "The field '%s' appears multiple times in the index key pattern %s", kel.Key(), key.String())
		}
		seen[kel.Key()] = true
	}
	if err := checkIndexKinds(key, keys); err != nil {
		return err
	}
	for _, kel := range keys {
		f, ok := kel.Value().AsFloat64OK()
		if isIndexKind(kel.Value()) {
			f, ok = 1, true // its kind checked the value
		}
		if !ok {
			if s, isStr := kel.Value().StringValueOK(); isStr {
				if s == geo.Sphere || s == geo.Plane {
					continue // checked with the pattern's other geo fields by checkGeoKeyPattern
				}
				if s == "" {
					return mongoerr.New(mongoerr.CannotCreateIndex, "Values in the index key pattern cannot be empty strings")
				}
				return mongoerr.New(mongoerr.CannotCreateIndex, "Index type '%s' is not supported", s)
			}
			return mongoerr.New(mongoerr.CannotCreateIndex, "Values in v:2 index key pattern cannot be of type %s. Only numbers > 0, numbers < 0, and strings are allowed.", typeName(kel.Value().Type))
		}
		if math.IsNaN(f) {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Values in the index key pattern cannot be NaN.")
		}
		if f == 0 {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Values in the index key pattern cannot be 0.")
		}
		name := kel.Key()
		if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot contain an empty field.")
		}
		for i, part := range strings.Split(name, ".") {
			if strings.HasPrefix(part, "$") && !(i > 0 && (part == "$id" || part == "$ref" || part == "$db")) {
				return mongoerr.New(mongoerr.CannotCreateIndex, "Index key contains an illegal field name: field name starts with '$'.")
			}
		}
	}
	if len(keys) > maxIndexFields {
		return mongoerr.New(mongoerr.Location13103, "too many compound keys")
	}
	return checkGeoKeyPattern(keys)
}

// parseExpireAfter validates expireAfterSeconds: the _ts index follows the
// Cosmos rules (TTL spec rule 5), any other field MongoDB's (rule 19).
func parseExpireAfter(keys []bson.RawElement, v bsoncore.Value) (int32, error) {
	if len(keys) == 1 && keys[0].Key() == record.TSField {
		return ttlindex.ParseTSExpireAfter(v)
	}
	if len(keys) > 1 {
		return 0, mongoerr.New(mongoerr.CannotCreateIndex, "TTL indexes are single-field indexes, compound indexes do not support TTL")
	}
	if keys[0].Key() == "_id" {
		return 0, mongoerr.New(mongoerr.CannotCreateIndex, "The field 'expireAfterSeconds' is not valid for an _id index specification")
	}
	return ttlindex.ParseDateExpireAfter(v)
}

func defaultIndexName(keys []bson.RawElement) string {
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		v := k.Value()
		var dir string
		if f, ok := v.AsFloat64OK(); ok {
			dir = strconv.FormatFloat(f, 'f', -1, 64)
		} else {
			dir = v.StringValue()
		}
		parts = append(parts, k.Key(), dir)
	}
	return strings.Join(parts, "_")
}

func truthy(v bson.RawValue) bool {
	switch v.Type {
	case bson.TypeBoolean:
		return v.Boolean()
	case bson.TypeNull, bson.TypeUndefined:
		return false
	}
	if f, ok := v.AsFloat64OK(); ok {
		return f != 0
	}
	return true
}

func typeName(t bson.Type) string { return bsonvalue.TypeName(bsoncore.Type(t)) }

// indexComparison is how a requested index relates to another, in
// MongoDB's terms: indexes that differ in key pattern or in an identifying
// option (unique, sparse, partial filter, collation) can coexist;
// equivalent ones agree on those but not on the other options; identical
// ones agree on everything but perhaps the name. hidden, which collMod
// changes, is not compared, as in MongoDB.
type indexComparison int

const (
	indexDifferent indexComparison = iota
	indexEquivalent
	indexIdentical
)

func compareIndexes(a, b record.IndexMeta) indexComparison {
	if string(a.Key) != string(b.Key) || a.Unique != b.Unique || a.Sparse != b.Sparse || string(a.Partial) != string(b.Partial) ||
		string(a.Collation()) != string(b.Collation()) {
		return indexDifferent
	}
	ea, eb := a.ExpireAfter, b.ExpireAfter
	if (ea == nil) != (eb == nil) || (ea != nil && *ea != *eb) || !maps.Equal(a.OtherOptions(), b.OtherOptions()) {
		return indexEquivalent
	}
	return indexIdentical
}

// idIndexMeta stands for the _id index, which every collection has and the
// catalog does not list.
var idIndexMeta = record.IndexMeta{Name: "_id_", Key: idKeyPattern, Unique: true}

// isIDKey reports whether a key pattern is the _id index's.
func isIDKey(key bson.Raw) bool {
	elems, err := key.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return false
	}
	f, ok := elems[0].Value().AsFloat64OK()
	return ok && f == 1
}

// checkIndexConflict checks a requested index against one that exists,
// with MongoDB's rules and codes. It reports exists when the request is
// identical to old and nothing needs building.
func checkIndexConflict(req, old record.IndexMeta) (exists bool, err error) {
	cmp := compareIndexes(req, old)
	if req.Name == old.Name {
		switch cmp {
		case indexDifferent:
			return false, mongoerr.New(mongoerr.IndexKeySpecsConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", req.Describe(), old.Describe())
		case indexEquivalent:
			return false, mongoerr.New(mongoerr.IndexOptionsConflict, "An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s", req.Describe(), old.Describe())
		}
		return true, nil
	}
	switch cmp {
	case indexEquivalent:
		return false, mongoerr.New(mongoerr.IndexOptionsConflict, "An equivalent index already exists with a different name and options. Requested index: %s, existing index: %s", req.Describe(), old.Describe())
	case indexIdentical:
		return false, mongoerr.New(mongoerr.IndexOptionsConflict, "Index already exists with a different name: %s", old.Name)
	}
	return false, nil
}

// CreateIndexes builds the given indexes on db.coll, creating the
// collection if needed. Existing identical indexes are left as they are.
func (e *Engine) CreateIndexes(ctx context.Context, db, coll string, specs []bson.Raw) (CreateIndexesResult, error) {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	t := transactionOf(ctx)
	if t == nil {
		for {
			res, err := e.createIndexes(ctx, db, coll, specs)
			var busy *buildInProgress
			if !errors.As(err, &busy) {
				return res, err
			}
			// As mongod does (createIndexes' log 20450): wait for the
			// build already under way, then look again; the index is
			// there then, or its build failed and this one builds it.
			if err := e.waitBuild(ctx, busy); err != nil {
				return CreateIndexesResult{}, err
			}
		}
	}
	if t.tx == nil {
		return CreateIndexesResult{}, mongoerr.New(mongoerr.InvalidOptions, "a write cannot run under read concern snapshot outside a transaction")
	}
	// In a transaction, on a collection it creates or created (MongoDB
	// 4.4+); the build itself runs outside it, on the committed
	// documents, and then covers the transaction's own.
	c := e.collection(db, coll)
	created := false
	if c == nil {
		var err error
		if c, created, err = e.ensureCollection(db, coll, nil); err != nil {
			return CreateIndexesResult{}, err
		}
		if created {
			t.noteCreated(c, true)
		}
	}
	res, err := t.indexesInTransaction(ctx, c, func() (CreateIndexesResult, error) {
		return e.createIndexes(ctx, db, coll, specs)
	})
	res.CreatedCollection = res.CreatedCollection || created
	return res, err
}

func (e *Engine) createIndexes(ctx context.Context, db, coll string, specs []bson.Raw) (CreateIndexesResult, error) {
	// The build runs outside any transaction of ctx: it writes committed
	// index entries under the collection's exclusive lock.
	ctx = context.WithValue(ctx, transactionKey{}, (*Transaction)(nil))
	var res CreateIndexesResult
	var metas []record.IndexMeta
	for _, s := range specs {
		im, err := parseIndexSpec(s)
		if err != nil {
			return res, err
		}
		metas = append(metas, e.inheritCollation(db, coll, s, im))
	}
	if e.collection(db, coll) == nil {
		// Refuse conflicting specs before creating the collection, which
		// a refused command must not leave behind.
		if _, err := e.newIndexes(nil, metas); err != nil {
			return res, err
		}
	}
	var c *Collection
	for {
		var created bool
		var err error
		c, created, err = e.ensureCollection(db, coll, nil)
		if err != nil {
			return res, err
		}
		res.CreatedCollection = res.CreatedCollection || created
		// A build needs no fence of its own (it goes through states),
		// but waits out another change's: this server's state may be
		// the fenced one while the change is already stored (fence.go),
		// and the purge below writes under it.
		if err := e.lockWaitingFences(ctx, c); err != nil {
			return res, err
		}
		if !c.st().dropped {
			break
		}
		c.ddl.Unlock()
	}
	defer c.ddl.Unlock()
	st := c.st()
	res.Before = 1 + len(st.meta.Indexes)
	meta := st.meta
	meta.Indexes = append([]record.IndexMeta(nil), meta.Indexes...)
	fresh, err := e.newIndexes(st, metas)
	if err != nil {
		return res, err
	}
	if busy := buildingOf(c, st, metas); busy != nil {
		return res, busy
	}
	if len(fresh) == 0 {
		res.After = res.Before
		res.Note = "all indexes already exist"
		return res, nil
	}
	if len(fresh) < len(metas) {
		res.Note = "index already exists"
	}
	first, err := e.allocIDs(ctx, len(fresh))
	if err != nil {
		return res, err
	}
	for i := range fresh {
		fresh[i].ID = first + uint64(i)
	}
	meta.Indexes = append(meta.Indexes, fresh...)
	nst, err := st.changed(meta)
	if err != nil {
		return res, err
	}
	// Expired documents are absent for unique checks (TTL spec rule 15):
	// purge them before a unique build reads every stored document.
	if st.ttl.Enabled && slices.ContainsFunc(fresh, func(im record.IndexMeta) bool { return im.Unique }) {
		if err := e.purgeExpired(ctx, c, st); err != nil {
			return res, err
		}
	}
	var ranges []reclaim.Range
	for _, im := range fresh {
		lo, hi := record.IndexRange(im.ID)
		ranges = append(ranges, reclaim.Range{Lo: lo, Hi: hi})
	}
	var ents []oplog.Entry
	for _, im := range fresh {
		o := append(bson.D{{Key: "createIndexes", Value: coll}}, im.Spec()...)
		ents = append(ents, cmdEntry(db, st.meta.UUID.Data, o, nil)...)
	}
	if e.cluster.member != nil {
		// Other servers write the collection meanwhile: the build goes
		// through states they all see (buildShared).
		if nst, err = e.buildShared(ctx, c, fresh, ranges, ents); err != nil {
			return res, err
		}
		c.usage.Built(fresh, e.clock)
		res.After = 1 + len(nst.meta.Indexes)
		return res, nil
	}
	if err := e.backfill(ctx, st, nst, fresh); err != nil {
		// The entries written so far are unreachable: no catalog entry
		// names the index.
		reclaim.Drop(ctx, e.store, e.log, ranges)
		return res, err
	}
	tx, err := e.beginCatalog(ctx, true)
	if err != nil {
		return res, err
	}
	defer tx.Rollback()
	if err := putMeta(tx, &nst.meta); err != nil {
		return res, err
	}
	if err := e.commitLogged(ctx, tx, kv.Sync, ents); err != nil {
		reclaim.Drop(ctx, e.store, e.log, ranges)
		return res, fmt.Errorf("engine: create indexes: %w", err)
	}
	c.setState(nst)
	c.usage.Built(fresh, e.clock)
	res.After = 1 + len(meta.Indexes)
	return res, nil
}

// newIndexes checks the requested indexes against those of st (nil for a
// collection yet to be created) and against each other, and returns the
// ones to build.
func (e *Engine) newIndexes(st *collState, metas []record.IndexMeta) ([]record.IndexMeta, error) {
	existing := []record.IndexMeta{idIndexOf(st)}
	if st != nil {
		existing = append(existing, st.meta.Indexes...)
	}
	var fresh []record.IndexMeta
	for _, im := range metas {
		if isIDKey(im.Key) {
			// The _id index is unique, and a spec of it without a name
			// means it.
			im.Unique = true
			if im.Name == defaultIndexName(mustElems(im.Key)) {
				im.Name = idIndexMeta.Name
			}
		}
		exists := false
		for _, old := range existing {
			found, err := checkIndexConflict(im, old)
			if err != nil {
				return nil, err
			}
			exists = exists || found
		}
		if exists {
			continue
		}
		if err := checkOneText(im, existing, fresh); err != nil {
			return nil, err
		}
		for _, earlier := range fresh {
			if found, err := checkIndexConflict(im, earlier); err != nil {
				return nil, err
			} else if found {
				return nil, e.duplicateSpec(context.TODO(), st, im)
			}
		}
		fresh = append(fresh, im)
	}
	return fresh, nil
}

// duplicateSpec is the error for a createIndexes command that asks for the
// same index twice: MongoDB builds indexes of an empty collection one after
// the other, so the second finds the first, and otherwise builds them
// together and refuses the pair.
func (e *Engine) duplicateSpec(ctx context.Context, st *collState, im record.IndexMeta) error {
	if st == nil {
		return mongoerr.New(mongoerr.IndexAlreadyExists, "Identical index already exists: %s", im.Name)
	}
	lo, hi := record.DocRange(st.meta.ID)
	it, err := e.store.Iter(ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: create indexes: %w", err)
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return fmt.Errorf("engine: create indexes: %w", err)
	}
	if empty {
		return mongoerr.New(mongoerr.IndexAlreadyExists, "Identical index already exists: %s", im.Name)
	}
	return mongoerr.New(mongoerr.OperationFailed, "Index build failed: collection %s: Cannot build two identical indexes. Try again without duplicate indexes.", st.ns())
}

// backfill writes the entries of the new indexes for every stored document.
// A duplicate in a new unique index fails the build.
func (e *Engine) backfill(ctx context.Context, old, nst *collState, fresh []record.IndexMeta) error {
	var build []*record.Index
	for _, ix := range nst.indexes {
		for _, im := range fresh {
			if ix.Meta.ID == im.ID {
				build = append(build, ix)
			}
		}
	}
	if len(build) == 0 {
		return nil
	}
	lo, hi := record.DocRange(old.meta.ID)
	it, err := e.store.Iter(ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: index build: %w", err)
	}
	defer it.Close()
	// The build writes in transactions of at most maxBatchBytes, unsynced
	// but the last: the catalog entry that makes the index visible commits
	// after them.
	begin := func() (kv.Txn, error) { return e.store.Begin(ctx, kv.TxnOptions{Pessimistic: true}) }
	b, err := begin()
	if err != nil {
		return err
	}
	defer func() { b.Rollback() }()
	multi := map[*record.Index]bool{}
	for ok := it.First(); ok; ok = it.Next() {
		_, doc, err := record.SplitValue(it.Value())
		if err != nil {
			return err
		}
		pk := record.PKOfDocKey(it.Key())
		for _, ix := range build {
			keys, isMulti, err := ix.Keys(doc)
			if err != nil {
				return err
			}
			if isMulti {
				multi[ix] = true
			}
			for _, k := range keys {
				ek := ix.EntryKey(nil, k, pk)
				if ix.Meta.Unique {
					if _, err := b.Get(ctx, ek); err == nil {
						return duplicateKey(nst, ix.Meta.Name, ix.Meta.Key, ix.KeyValue(doc))
					} else if err != kv.ErrNotFound {
						return err
					}
				}
				if err := b.Set(ek, pk); err != nil {
					return err
				}
			}
		}
		if b.Size() > maxBatchBytes {
			if _, err := b.Commit(ctx, kv.NoSync); err != nil {
				return err
			}
			if b, err = begin(); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	for ix := range multi {
		ix.Meta.Multikey = true
		for i := range nst.meta.Indexes {
			if nst.meta.Indexes[i].ID == ix.Meta.ID {
				nst.meta.Indexes[i].Multikey = true
			}
		}
	}
	_, err = b.Commit(ctx, kv.Sync)
	return err
}

// markMultikey records, before the write that makes it so, that an index
// holds a multikey document, so the planner stops intersecting bounds on it.
func (e *Engine) markMultikey(ctx context.Context, c *Collection, ix *record.Index) error {
	return e.updateMeta(ctx, c, false, func(meta *collMeta, _ kv.Txn) error {
		for i := range meta.Indexes {
			if meta.Indexes[i].ID == ix.Meta.ID {
				meta.Indexes[i].Multikey = true
			}
		}
		return nil
	}, nil)
}

// updateMeta changes a collection's catalog entry durably and installs the
// new state. Callers hold c.ddl, exclusive as the catalog commands do or
// shared as a writer marking an index multikey does; metaMu orders the
// read-modify-write among them.
//
// On a store shared by several servers the change applies to the entry as
// stored, which another server may have changed since this one installed
// it (cluster.go): under the exclusive lock the stored entry with the
// change is installed, as no write of this server runs; under the shared
// one only the change is, on this server's own entry, and its refresh
// installs the rest when no write runs.
//
// logged, when not nil, gives the oplog entries of the change from the old
// entry to the new, committed with it.
//
// change may write more in the transaction of the change (tx); it is
// called once.
func (e *Engine) updateMeta(ctx context.Context, c *Collection, exclusive bool, change func(meta *collMeta, tx kv.Txn) error, logged func(before, after *collMeta) []oplog.Entry) error {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	st := c.st()
	if st.dropped {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", st.ns())
	}
	tx, err := e.beginCatalog(ctx, true)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	before, stale, err := e.storedMeta(ctx, tx, st)
	if err != nil {
		return err
	}
	meta := before
	meta.Indexes = append([]record.IndexMeta(nil), meta.Indexes...)
	if err := change(&meta, tx); err != nil {
		return err
	}
	if exclusive {
		// The change a fence held writes off for is made (fence.go).
		meta.Fence = ""
	}
	install := meta
	if stale && !exclusive {
		// Only the change, on this server's own entry: a writer marks
		// an index multikey, and the other changes wait for the
		// refresh.
		install = st.meta
		install.Indexes = append([]record.IndexMeta(nil), install.Indexes...)
		for i := range install.Indexes {
			for _, im := range meta.Indexes {
				if im.ID == install.Indexes[i].ID {
					install.Indexes[i].Multikey = install.Indexes[i].Multikey || im.Multikey
				}
			}
		}
	}
	nst, err := st.changed(install)
	if err != nil {
		return err
	}
	if err := putMeta(tx, &meta); err != nil {
		return err
	}
	var ents []oplog.Entry
	if logged != nil {
		ents = logged(&before, &meta)
	}
	if err := e.commitLogged(ctx, tx, kv.Sync, ents); err != nil {
		return fmt.Errorf("engine: update catalog of %s: %w", st.ns(), err)
	}
	c.setState(nst)
	return nil
}
