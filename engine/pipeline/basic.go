package pipeline

import (
	"bytes"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// matchStage is $match.
type matchStage struct {
	f *query.Filter
}

func compileMatch(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	doc, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15959), "the match filter must be an expression in an object")
	}
	f, err := query.CompileWith(doc, query.Options{Now: c.opts.Now, Collator: c.opts.Collator})
	if err != nil {
		return nil, err
	}
	if f.Near() != nil {
		return nil, query.NearNotAllowed()
	}
	return &matchStage{f: f}, nil
}

func (s *matchStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	out := docs[:0]
	for _, d := range docs {
		// A $expr that fails on a document fails the pipeline, as in
		// MongoDB.
		ok, err := s.f.MatchErr(d)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// sortStage is $sort.
type sortStage struct {
	s *query.Sort
}

func compileSort(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	doc, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15973), "the $sort key specification must be an object")
	}
	if err := CheckSortSpec(doc); err != nil {
		return nil, err
	}
	s, err := query.CompileSortWith(doc, c.opts.Collator)
	if err != nil {
		return nil, err
	}
	return &sortStage{s: s}, nil
}

func (*sortStage) blocks() {}

func (s *sortStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	h := held{limit: r.blocking(SortExceeded)}
	if err := h.add(sizeOf(docs)); err != nil {
		return nil, err
	}
	if s.s.UsesTextScore() {
		score := text.ScorerFrom(r.ctx)
		if score == nil {
			return nil, text.ErrNoScore()
		}
		slices.SortStableFunc(docs, s.s.CompareScored(func(doc []byte) float64 {
			v, _ := score(doc)
			return v // MongoDB sorts a document without a score as 0
		}))
	} else if s.s.Collator() != nil {
		return sortByKeys(docs, s.s, &h)
	} else {
		slices.SortStableFunc(docs, s.s.Compare)
	}
	return docs, nil
}

// sortByKeys sorts docs by srt computing each document's sort key once:
// under a collation a comparison would compute two collation keys, and a
// sort makes n log n comparisons. The keys count against h.
func sortByKeys(docs []bson.Raw, srt *query.Sort, h *held) ([]bson.Raw, error) {
	type keyed struct {
		key []byte
		doc bson.Raw
	}
	ks := make([]keyed, len(docs))
	for i, d := range docs {
		ks[i] = keyed{srt.AppendKey(nil, d), d}
		if err := h.add(len(ks[i].key)); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return bytes.Compare(a.key, b.key) })
	for i := range ks {
		docs[i] = ks[i].doc
	}
	return docs, nil
}

// skipStage is $skip, and limitStage $limit.
type (
	skipStage  struct{ n int64 }
	limitStage struct{ n int64 }
)

func compileSkip(_ *compiler, name string, arg bson.RawValue) (stage, error) {
	n, err := nonNegative(name, arg, 5107200)
	if err != nil {
		return nil, err
	}
	return &skipStage{n: n}, nil
}

func compileLimit(_ *compiler, name string, arg bson.RawValue) (stage, error) {
	n, err := nonNegative(name, arg, 5107201)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, mongoerr.New(mongoerr.Code(15958), "the limit must be positive")
	}
	return &limitStage{n: n}, nil
}

// nonNegative reads the argument of $skip or $limit: a whole number of
// any numeric type, not negative.
func nonNegative(name string, arg bson.RawValue, code mongoerr.Code) (int64, error) {
	n, ok := bsonvalue.IntegerValue(bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value})
	switch {
	case !ok:
		return 0, mongoerr.New(code, "invalid argument to %s stage: Expected an integer: %s: %s", name, name, arg)
	case n < 0:
		return 0, mongoerr.New(code, "invalid argument to %s stage: Expected a non-negative number in: %s: %d", name, name, n)
	}
	return n, nil
}

func (s *skipStage) apply(_ *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	return docs[min(s.n, int64(len(docs))):], nil
}

func (s *limitStage) apply(_ *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	return docs[:min(s.n, int64(len(docs)))], nil
}

// countStage is $count.
type countStage struct {
	field string
}

func compileCount(_ *compiler, _ string, arg bson.RawValue) (stage, error) {
	field, ok := arg.StringValueOK()
	var code mongoerr.Code
	var msg string
	switch {
	case !ok:
		code, msg = 40156, "the count field must be a non-empty string"
	case field == "":
		code, msg = 40157, "the count field must be a non-empty string"
	case strings.HasPrefix(field, "$"):
		code, msg = 40158, "the count field cannot be a $-prefixed path"
	case strings.Contains(field, "\x00"):
		code, msg = 40159, "the count field cannot contain a null byte"
	case strings.Contains(field, "."):
		code, msg = 40160, "the count field cannot contain '.'"
	default:
		return &countStage{field: field}, nil
	}
	return nil, mongoerr.New(code, "%s", msg)
}

func (*countStage) blocks() {}

func (s *countStage) apply(_ *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	out, _ := bson.Marshal(bson.D{{Key: s.field, Value: int32(len(docs))}})
	return []bson.Raw{out}, nil
}

// stream counts the documents of src as they come, holding none of them.
func (s *countStage) stream(r *run, src Source) ([]bson.Raw, error) {
	n := 0
	err := src(func(bson.Raw) error {
		if n++; n%256 == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		return nil
	})
	if err != nil || n == 0 {
		return nil, err
	}
	out, _ := bson.Marshal(bson.D{{Key: s.field, Value: int32(n)}})
	return []bson.Raw{out}, nil
}

// CheckSortSpec refuses what a $sort stage may not be but a find's sort
// may: empty.
func CheckSortSpec(doc bson.Raw) error {
	if len(doc) <= 5 {
		return mongoerr.New(mongoerr.Code(15976), "$sort stage must have at least one sort key")
	}
	return nil
}
