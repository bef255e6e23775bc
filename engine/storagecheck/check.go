package storagecheck

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/validation"
	"github.com/lethedb/lethe/ttlindex"
)

// Result is what the validate command reports of a collection.
type Result struct {
	UUID     bson.Binary
	Valid    bool
	Errors   []string
	Warnings []string
	// NRecords counts stored documents, expired but not yet purged ones
	// included: validate looks at storage, not at what queries see.
	NRecords int64
	NIndexes int
	// Indexes are the index names in listIndexes order, "_id_" first.
	Indexes []string
	// KeysPerIndex counts each index's entries. The _id index is the
	// document family itself; the _ts TTL index counts the expiry entries
	// that serve it.
	KeysPerIndex map[string]int64
	// InvalidIndexes names the indexes found inconsistent.
	InvalidIndexes map[string]bool
	// NInvalidDocuments counts documents whose header or BSON does not
	// parse, or whose _id does not match their record key.
	NInvalidDocuments int64
	// NNonCompliantDocuments counts documents the collection's validator
	// refuses (stored before it, under moderate or warn, or bypassing it);
	// none under validationLevel off. They make no collection invalid.
	NNonCompliantDocuments int64

	MissingIndexEntries, ExtraIndexEntries   int64
	MissingExpiryEntries, ExtraExpiryEntries int64

	// The first problems in detail, for the reply's missingIndexEntries,
	// extraIndexEntries and corruptRecords.
	MissingEntryDetails, ExtraEntryDetails []IndexEntryProblem
	CorruptRecords                         [][]byte
}

// IndexEntryProblem locates one missing or extra index entry.
type IndexEntryProblem struct {
	Index    string
	RecordID []byte        // the record key the entry has or should have
	ID       bson.RawValue // the document's _id, when it has one
}

// maxMessages bounds the detailed messages of one validation, so a
// badly damaged collection cannot produce a reply over the BSON limit; the
// totals are always reported.
const maxMessages = 100

// CheckEvery is how many records pass between checks of the
// context.
const CheckEvery = 256

// Collection is what a check needs of the collection it checks, as of
// the snapshot it reads.
type Collection struct {
	NS   string // "db.name", for messages
	ID   uint64
	UUID bson.Binary
	// IndexMeta are the secondary indexes in listIndexes order, Indexes
	// those of them that have entries.
	IndexMeta []record.IndexMeta
	Indexes   []*record.Index
	// TTL says the collection expires documents by _ts: its expiry
	// entries serve its _ts TTL index, if it has one.
	TTL bool
	// Validator is the collection's validator; nil if it has none.
	Validator *validation.Validator
	// IDCollation is the collation its primary keys are made under: a
	// document's key is its _id's key under it (nil: the _id itself).
	IDCollation *collation.Collator
}

// Check checks the storage of c in snap against itself: every document
// parses and has exactly the index and expiry entries its contents call
// for, and every entry belongs to a stored document that calls for it.
// Entries are checked one by one when the counts disagree or full is set;
// otherwise matching counts with no entry missing prove there is no extra
// one. now is the command's time, $$NOW in the validator.
func Check(ctx context.Context, snap kv.Snapshot, c Collection, now time.Time, full bool) (Result, error) {
	v := &storageCheck{ctx: ctx, snap: snap, c: c, full: full, now: now, expected: make([]int64, len(c.Indexes))}
	v.res.UUID = c.UUID
	v.res.KeysPerIndex = map[string]int64{}
	v.res.InvalidIndexes = map[string]bool{}
	v.res.Indexes = append(v.res.Indexes, "_id_")
	for _, im := range c.IndexMeta {
		v.res.Indexes = append(v.res.Indexes, im.Name)
	}
	v.res.NIndexes = len(v.res.Indexes)
	if err := v.documents(); err != nil {
		return Result{}, err
	}
	for i, ix := range c.Indexes {
		if err := v.indexEntries(i, ix); err != nil {
			return Result{}, err
		}
	}
	if err := v.expiryEntries(); err != nil {
		return Result{}, err
	}
	v.summarize()
	return v.res, nil
}

// storageCheck is the state of one Check.
type storageCheck struct {
	ctx  context.Context
	snap kv.Snapshot
	c    Collection
	full bool
	now  time.Time // of the command, $$NOW in the validator
	res  Result

	expected       []int64 // entries the documents call for, per st.indexes
	expectedExpiry int64
	nonConformant  bool // a document breaks the BSON specification
	schemaFailed   bool // a document fails the collection's validator
	ticks          int
	reported       int
}

// stored is a document as the snapshot holds it: its record key, header
// and BSON.
type stored struct {
	pk  []byte
	h   record.Header
	doc bson.Raw
}

func (v *storageCheck) errorf(format string, args ...any) {
	if v.reported < maxMessages {
		v.res.Errors = append(v.res.Errors, fmt.Sprintf(format, args...))
	}
	v.reported++
}

// tick checks the context every CheckEvery calls.
func (v *storageCheck) tick() error {
	v.ticks++
	if v.ticks%CheckEvery == 0 {
		if err := v.ctx.Err(); err != nil {
			return fmt.Errorf("engine: validate %s: %w", v.c.NS, err)
		}
	}
	return nil
}

// documents checks every stored document and that each of its entries
// exists and points back at it.
func (v *storageCheck) documents() error {
	lo, hi := record.DocRange(v.c.ID)
	it, err := v.snap.Iter(v.ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: validate: %w", err)
	}
	defer it.Close()
	multikey := make([]bool, len(v.c.Indexes))
	var validator *query.Filter
	// Under validationLevel off the validator refuses nothing, so no
	// document is out of compliance (as MongoDB's validate counts).
	if val := v.c.Validator; val != nil && val.Level != validation.LevelOff {
		validator = val.FilterAt(v.now)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := v.tick(); err != nil {
			return err
		}
		v.res.NRecords++
		pk := append([]byte(nil), record.PKOfDocKey(it.Key())...)
		d, problem := v.parseStored(pk, it.Value())
		if problem != "" {
			v.res.NInvalidDocuments++
			if len(v.res.CorruptRecords) < maxMessages {
				v.res.CorruptRecords = append(v.res.CorruptRecords, pk)
			}
			v.errorf("record %x: %s", pk, problem)
			continue
		}
		if validator != nil && !validator.Match(d.doc) {
			v.res.NNonCompliantDocuments++
			v.schemaFailed = true
		} else if v.full && !record.ConformantBSON(bsoncore.Document(d.doc)) {
			v.res.NNonCompliantDocuments++
			v.nonConformant = true
		}
		for i, ix := range v.c.Indexes {
			keys, multi, err := ix.Keys(d.doc)
			if err != nil {
				v.errorf("document %s: index %s: %v", docName(d), ix.Meta.Name, err)
				v.res.InvalidIndexes[ix.Meta.Name] = true
				continue
			}
			if multi && !ix.Meta.Multikey && !multikey[i] {
				multikey[i] = true
				v.res.InvalidIndexes[ix.Meta.Name] = true
				v.errorf("index %s is not marked multikey but document %s has an array on its key", ix.Meta.Name, docName(d))
			}
			for _, k := range keys {
				v.expected[i]++
				ek := ix.EntryKey(nil, k, d.pk)
				val, err := v.snap.Get(v.ctx, ek)
				if err == kv.ErrNotFound {
					v.missingEntry(ix, d)
					v.errorf("index %s: entry of document %s is missing", ix.Meta.Name, docName(d))
					continue
				}
				if err != nil {
					return fmt.Errorf("engine: validate: %w", err)
				}
				owner := append([]byte(nil), val...)
				if !bytes.Equal(owner, d.pk) {
					v.missingEntry(ix, d)
					if ix.Meta.Unique {
						v.errorf("unique index %s: document %s has the key of record %x", ix.Meta.Name, docName(d), owner)
					} else {
						v.errorf("index %s: entry of document %s points at record %x", ix.Meta.Name, docName(d), owner)
					}
				}
			}
		}
		if ek := record.ExpiryKey(v.c.ID, d.h, d.pk); ek != nil {
			v.expectedExpiry++
			_, err := v.snap.Get(v.ctx, ek)
			if err == kv.ErrNotFound {
				v.res.MissingExpiryEntries++
				v.errorf("expiry entry of document %s is missing", docName(d))
				continue
			}
			if err != nil {
				return fmt.Errorf("engine: validate: %w", err)
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("engine: validate: %w", err)
	}
	v.res.KeysPerIndex["_id_"] = v.res.NRecords
	return nil
}

func (v *storageCheck) missingEntry(ix *record.Index, d *stored) {
	v.res.MissingIndexEntries++
	v.res.InvalidIndexes[ix.Meta.Name] = true
	if len(v.res.MissingEntryDetails) < maxMessages {
		id := record.IDOf(d.doc)
		v.res.MissingEntryDetails = append(v.res.MissingEntryDetails, IndexEntryProblem{
			Index: ix.Meta.Name, RecordID: d.pk,
			ID: bson.RawValue{Type: bson.Type(id.Type), Value: bytes.Clone(id.Data)},
		})
	}
}

// parseStored splits a stored value and checks that its document is valid
// BSON whose _id is the record's key; problem describes what is wrong.
func (v *storageCheck) parseStored(pk, val []byte) (d *stored, problem string) {
	h, doc, err := record.SplitValue(val)
	if err != nil {
		return nil, "header does not parse"
	}
	if err := bsoncore.Document(doc).Validate(); err != nil {
		return nil, fmt.Sprintf("document is not valid BSON: %v", err)
	}
	id := record.IDOf(doc)
	if id.Type == 0 {
		return nil, "document has no _id"
	}
	if !bytes.Equal(keycodec.Append(nil, v.c.IDCollation.Key(id)), pk) {
		return nil, "document's _id does not match its record key"
	}
	return &stored{pk: pk, h: h, doc: bson.Raw(doc)}, ""
}

// docName names a document in messages by its _id.
func docName(d *stored) string {
	return bson.RawValue{Type: bson.Type(record.IDOf(d.doc).Type), Value: record.IDOf(d.doc).Data}.String()
}

// count counts the keys of it from its first; the caller may position it
// again afterwards.
func (v *storageCheck) count(it kv.Iterator) (int64, error) {
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		if err := v.tick(); err != nil {
			return 0, err
		}
		n++
	}
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("engine: validate: %w", err)
	}
	return n, nil
}

// indexEntries counts the entries of st.indexes[i] and, when needed,
// checks each against the document it points at.
func (v *storageCheck) indexEntries(i int, ix *record.Index) error {
	lo, hi := record.IndexRange(ix.Meta.ID)
	it, err := v.snap.Iter(v.ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: validate: %w", err)
	}
	defer it.Close()
	n, err := v.count(it)
	if err != nil {
		return err
	}
	v.res.KeysPerIndex[ix.Meta.Name] = n
	if n == v.expected[i] && !v.full {
		return nil
	}
	prefixLen := len(lo)
	for ok := it.First(); ok; ok = it.Next() {
		if err := v.tick(); err != nil {
			return err
		}
		ek, pk := it.Key(), it.Value()
		problem, err := v.checkIndexEntry(ix, ek[prefixLen:], pk)
		if err != nil {
			return err
		}
		if problem != "" {
			v.res.ExtraIndexEntries++
			v.res.InvalidIndexes[ix.Meta.Name] = true
			if len(v.res.ExtraEntryDetails) < maxMessages {
				v.res.ExtraEntryDetails = append(v.res.ExtraEntryDetails, IndexEntryProblem{Index: ix.Meta.Name, RecordID: bytes.Clone(pk)})
			}
			v.errorf("index %s: entry %x %s", ix.Meta.Name, ek, problem)
		}
	}
	return it.Error()
}

// checkIndexEntry reports what is wrong with one entry of ix, whose key
// after the index prefix is rest and whose value is pk; "" if nothing.
func (v *storageCheck) checkIndexEntry(ix *record.Index, rest, pk []byte) (string, error) {
	key := rest
	if !ix.Meta.Unique {
		if len(rest) < len(pk) || !bytes.Equal(rest[len(rest)-len(pk):], pk) {
			return "does not end in the record key it points at", nil
		}
		key = rest[:len(rest)-len(pk)]
	}
	d, problem, err := v.load(pk)
	if err != nil {
		return "", err
	}
	if problem != "" {
		return problem, nil
	}
	keys, _, err := ix.Keys(d.doc)
	if err != nil {
		return fmt.Sprintf("points at document %s whose keys cannot be computed: %v", docName(d), err), nil
	}
	if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }) {
		return fmt.Sprintf("points at document %s, which does not have this key", docName(d)), nil
	}
	return "", nil
}

// load reads the document an entry points at from the snapshot; problem
// says why there is none to compare with.
func (v *storageCheck) load(pk []byte) (d *stored, problem string, err error) {
	val, err := v.snap.Get(v.ctx, record.DocKey(nil, v.c.ID, pk))
	if err == kv.ErrNotFound {
		return nil, "points at no stored document", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("engine: validate: %w", err)
	}
	d, problem = v.parseStored(append([]byte(nil), pk...), val)
	if problem != "" {
		return nil, "points at an invalid record", nil
	}
	d.doc = append(bson.Raw(nil), d.doc...)
	return d, "", nil
}

// expiryEntries counts the collection's expiry entries and, when needed,
// checks each against its document.
func (v *storageCheck) expiryEntries() error {
	lo, hi := ttlindex.CollRange(v.c.ID)
	it, err := v.snap.Iter(v.ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: validate: %w", err)
	}
	defer it.Close()
	n, err := v.count(it)
	if err != nil {
		return err
	}
	tsIndex := ""
	if v.c.TTL {
		for _, im := range v.c.IndexMeta {
			if len(im.Key) > 0 && im.Key.Lookup(record.TSField).Type != 0 && im.ExpireAfter != nil {
				v.res.KeysPerIndex[im.Name] = n
				tsIndex = im.Name
			}
		}
	}
	defer func() {
		// The expiry entries are the _ts index's entries.
		if tsIndex != "" && v.res.MissingExpiryEntries+v.res.ExtraExpiryEntries > 0 {
			v.res.InvalidIndexes[tsIndex] = true
		}
	}()
	if n == v.expectedExpiry && !v.full {
		return nil
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := v.tick(); err != nil {
			return err
		}
		k := it.Key()
		problem := ""
		_, _, _, pk, err := ttlindex.ParseKey(k)
		if err != nil {
			problem = "does not parse"
		} else {
			var d *stored
			d, problem, err = v.load(pk)
			if err != nil {
				return err
			}
			if problem == "" && !bytes.Equal(record.ExpiryKey(v.c.ID, d.h, d.pk), k) {
				problem = fmt.Sprintf("does not match the _ts and ttl of document %s", docName(d))
			}
		}
		if problem != "" {
			v.res.ExtraExpiryEntries++
			v.errorf("expiry entry %x %s", k, problem)
		}
	}
	return it.Error()
}

// summarize adds the totals to the messages and decides validity.
func (v *storageCheck) summarize() {
	if v.reported > maxMessages {
		v.res.Errors = append(v.res.Errors, fmt.Sprintf("%d more problems not listed", v.reported-maxMessages))
	}
	r := &v.res
	for _, c := range []struct {
		n    int64
		what string
	}{
		{r.NInvalidDocuments, "invalid documents"},
		{r.MissingIndexEntries, "missing index entries"},
		{r.ExtraIndexEntries, "index entries that belong to no document"},
		{r.MissingExpiryEntries, "missing expiry entries"},
		{r.ExtraExpiryEntries, "expiry entries that belong to no document"},
	} {
		if c.n > 0 {
			r.Errors = append(r.Errors, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if v.schemaFailed {
		r.Warnings = append(r.Warnings, "Detected one or more documents in this collection not conformant to the schema validation rules applied to it.")
	}
	if v.nonConformant {
		r.Warnings = append(r.Warnings, record.NonConformantBSONWarning)
	}
	if r.Errors == nil {
		r.Errors = []string{}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	r.Valid = len(r.Errors) == 0
}
