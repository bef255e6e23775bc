package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// SortField is one field of a sort specification.
type SortField struct {
	Path string
	Desc bool
}

// Sort is a compiled sort specification. It is safe for concurrent use.
type Sort struct {
	fields  []sortField
	natural int
	// score is the text score of a document, for fields sorted by
	// {$meta: "textScore"}, once bound (BindTextScore).
	score func(doc []byte) float64
	coll  *collation.Collator // strings compare under it; nil is simple
}

// maxSortKeys is the most fields a sort may name.
const maxSortKeys = 32

type sortField struct {
	SortField
	parts []string
	meta  bool // {$meta: "textScore"}: by text score, highest first
}

// MetaPath is the path Fields reports for a field sorted by text score,
// which names no index field.
const MetaPath = "$textScore"

// CompileSort compiles a sort specification such as {a: 1, "b.c": -1}.
// Directions are 1 or -1 of any numeric type. {$natural: 1} or -1 asks for
// storage order, reported by Natural; it cannot be combined with fields.
// Sorting by {$meta: ...} is refused, and so are more than maxSortKeys
// fields.
func CompileSort(spec bson.Raw) (*Sort, error) {
	return CompileSortWith(spec, nil)
}

// CompileSortWith is CompileSort under a collation: strings, also inside
// arrays and documents, compare under coll.
func CompileSortWith(spec bson.Raw, coll *collation.Collator) (*Sort, error) {
	if len(spec) > 0 {
		if err := spec.Validate(); err != nil {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid sort document: %v", err)
		}
	}
	s := &Sort{coll: coll}
	it := bsonvalue.ElementsOf(spec)
	for {
		name, v, ok := it.Next()
		if !ok {
			break
		}
		path := string(name)
		if isTextScoreMeta(v) {
			if len(s.fields) == maxSortKeys {
				return nil, mongoerr.New(13103, "too many compound keys")
			}
			s.fields = append(s.fields, sortField{SortField: SortField{Path: MetaPath, Desc: true}, meta: true})
			continue
		}
		desc, err := sortDirection(path, v)
		if err != nil {
			return nil, err
		}
		if path == "$natural" {
			s.natural = 1
			if desc {
				s.natural = -1
			}
			continue
		}
		if err := checkSortPath(path); err != nil {
			return nil, err
		}
		// MongoDB orders sort keys as it does index keys, at most 32.
		if len(s.fields) == maxSortKeys {
			return nil, mongoerr.New(13103, "too many compound keys")
		}
		s.fields = append(s.fields, sortField{SortField: SortField{Path: path, Desc: desc}, parts: splitPath(path)})
	}
	if s.natural != 0 && len(s.fields) > 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "$natural cannot be combined with other sort fields")
	}
	return s, nil
}

// isTextScoreMeta reports whether a sort value is {$meta: "textScore"}.
func isTextScoreMeta(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	m, err := bsoncore.Document(v.Data).LookupErr("$meta")
	s, ok := m.StringValueOK()
	return err == nil && ok && s == "textScore" && len(mustElements(v.Data)) == 1
}

func mustElements(doc []byte) []bsoncore.Element {
	els, _ := bsoncore.Document(doc).Elements()
	return els
}

func sortDirection(path string, v bsoncore.Value) (desc bool, err error) {
	if v.Type == bsoncore.TypeEmbeddedDocument {
		if bsonvalue.FirstKey(v.Data) == "$meta" {
			return false, mongoerr.New(mongoerr.NotImplemented, "sorting by $meta is not supported by Lethe")
		}
		return false, mongoerr.New(17312, "$meta is the only expression supported by $sort right now")
	}
	if !v.IsNumber() {
		return false, mongoerr.New(15974, "Illegal key in $sort specification: %s: %s", path, v)
	}
	switch n, ok := bsonvalue.IntegerValue(v); {
	case ok && n == 1:
		return false, nil
	case ok && n == -1:
		return true, nil
	}
	return false, mongoerr.New(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
}

func checkSortPath(path string) error {
	if path == "" {
		return mongoerr.New(40352, "FieldPath cannot be constructed with empty string")
	}
	for _, part := range strings.Split(path, ".") {
		if err := bsonvalue.CheckFieldName(part); err != nil {
			return err
		}
	}
	return nil
}

// Fields returns the sort fields in order.
func (s *Sort) Fields() []SortField {
	fields := make([]SortField, len(s.fields))
	for i, f := range s.fields {
		fields[i] = f.SortField
	}
	return fields
}

// Natural returns 1 or -1 for a {$natural: ±1} sort, else 0.
func (s *Sort) Natural() int {
	return s.natural
}

// Compare returns -1, 0 or +1 as document a sorts before, with or after b.
// Each field compares one value per document in BSON order: a missing field
// counts as null; an array counts as its smallest element in an ascending
// sort and its largest in a descending one, an empty array as less than
// null; a dotted path through arrays counts every value it reaches. A
// $natural sort compares all documents equal, leaving storage order alone.
func (s *Sort) Compare(a, b bson.Raw) int {
	return s.compare(a, b, s.score)
}

// UsesTextScore reports whether the sort has a {$meta: "textScore"} field.
func (s *Sort) UsesTextScore() bool {
	for _, f := range s.fields {
		if f.meta {
			return true
		}
	}
	return false
}

// BindTextScore gives Compare the text score of documents, the score of
// the query's $text.
func (s *Sort) BindTextScore(score func(doc []byte) float64) { s.score = score }

// CompareScored is Compare with the text scores of score.
func (s *Sort) CompareScored(score func(doc []byte) float64) func(a, b bson.Raw) int {
	return func(a, b bson.Raw) int { return s.compare(a, b, score) }
}

func (s *Sort) compare(a, b bson.Raw, score func(doc []byte) float64) int {
	for _, f := range s.fields {
		if f.meta {
			var sa, sb float64
			if score != nil {
				sa, sb = score(a), score(b)
			}
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			continue
		}
		c := s.coll.Compare(sortKey(a, f.parts, f.Desc, s.coll), sortKey(b, f.parts, f.Desc, s.coll))
		if c != 0 {
			if f.Desc {
				return -c
			}
			return c
		}
	}
	return 0
}

// sortKey returns the value a document sorts by for one field: the least
// (or, descending, the greatest) of the keys an index on the field would
// hold for the document.
func sortKey(doc []byte, parts []string, desc bool, coll *collation.Collator) bsoncore.Value {
	k := keyPicker{desc: desc, coll: coll}
	k.collect(doc, parts)
	return k.best
}

// keyPicker keeps the least or the greatest of the keys offered.
type keyPicker struct {
	desc  bool
	found bool
	best  bsoncore.Value
	coll  *collation.Collator
}

func (k *keyPicker) offer(v bsoncore.Value) {
	if !k.found {
		k.best, k.found = v, true
		return
	}
	c := k.coll.Compare(v, k.best)
	if (c < 0 && !k.desc) || (c > 0 && k.desc) {
		k.best = v
	}
}

// collect offers the keys of the path parts in doc, generated as MongoDB
// generates index keys: missing values are null, an array at the end of the
// path offers its elements (an empty one offers undefined, which sorts
// before null), and an array in the middle offers what the rest of the path
// finds in each element, null for elements that are not documents.
func (k *keyPicker) collect(doc []byte, parts []string) {
	v, ok := bsonvalue.Lookup(doc, parts[0])
	if !ok {
		k.offer(bsonvalue.Null)
		return
	}
	k.follow(v, parts[1:], true)
}

// follow continues the path rest from v, a value it reached; at the end of
// the path an array offers its elements when expandLeaf is set.
func (k *keyPicker) follow(v bsoncore.Value, rest []string, expandLeaf bool) {
	switch {
	case len(rest) == 0:
		k.offerLeaf(v, expandLeaf)
	case v.Type == bsoncore.TypeEmbeddedDocument:
		k.collect(v.Data, rest)
	case v.Type == bsoncore.TypeArray:
		k.collectArray(v.Data, rest)
	default:
		k.offer(bsonvalue.Null)
	}
}

func (k *keyPicker) offerLeaf(v bsoncore.Value, expand bool) {
	switch {
	case v.Type != bsoncore.TypeArray:
		k.offer(v)
	case isEmptyContainer(v.Data):
		k.offer(bsonvalue.Undefined)
	case !expand:
		k.offer(v)
	default:
		it := bsonvalue.ElementsOf(v.Data)
		for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
			k.offer(e)
		}
	}
}

// collectArray continues a path into an array met in its middle. A numeric
// component that names an element selects it by position instead, and an
// array selected that way at the end of the path counts as a whole; one that
// names no element is a field name in the element documents.
func (k *keyPicker) collectArray(arr []byte, rest []string) {
	if isEmptyContainer(arr) {
		k.offer(bsonvalue.Null)
		return
	}
	if position, ok := arrayPosition(rest[0]); ok {
		if e, found := arrayElement(arr, position); found {
			k.follow(e, rest[1:], false)
			return
		}
	}
	it := bsonvalue.ElementsOf(arr)
	for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
		if e.Type == bsoncore.TypeEmbeddedDocument {
			k.collect(e.Data, rest)
		} else {
			k.offer(bsonvalue.Null)
		}
	}
}

func arrayElement(arr []byte, position int) (bsoncore.Value, bool) {
	it := bsonvalue.ElementsOf(arr)
	for i := 0; ; i++ {
		_, e, ok := it.Next()
		if !ok || i == position {
			return e, ok
		}
	}
}

// Collator returns the collation the sort compares strings under; nil is
// the simple collation.
func (s *Sort) Collator() *collation.Collator { return s.coll }

// AppendKey appends doc's sort key to dst: bytes whose order is the sort's
// order of documents, bytes.Compare(s.AppendKey(nil, a), s.AppendKey(nil,
// b)) having the sign of s.Compare(a, b). A sort of many documents under a
// collation computes each document's collation keys once this way rather
// than at every comparison.
func (s *Sort) AppendKey(dst []byte, doc bson.Raw) []byte {
	for _, f := range s.fields {
		k := s.coll.Key(sortKey(doc, f.parts, f.Desc, s.coll))
		if f.Desc {
			dst = keycodec.AppendDesc(dst, k)
		} else {
			dst = keycodec.Append(dst, k)
		}
	}
	return dst
}
