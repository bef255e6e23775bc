package project

import (
	"bytes"
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// Projection is a compiled projection: of a find command, or of a
// pipeline's $project, $addFields (or $set) or $unset stage. It is safe for
// concurrent use.
type Projection struct {
	root *node // nil for the empty projection
	typ  projType
}

// Options are the context a projection is compiled in.
type Options struct {
	// Now is the value of $$NOW in computed fields. The zero time means
	// the time of compilation.
	Now time.Time
	// Collator is the collation the computed fields compare strings
	// under; nil is the simple collation.
	Collator *collation.Collator
}

// Compile parses a find projection document. Errors carry MongoDB's codes.
// The projection keeps its own copy of the document.
func Compile(spec bson.Raw) (*Projection, error) {
	return CompileWith(spec, Options{})
}

// CompileWith is Compile in the context opts describes.
func CompileWith(spec bson.Raw, opts Options) (*Projection, error) {
	if err := validate(spec); err != nil {
		return nil, err
	}
	return compile(spec, parser{now: opts.Now, coll: opts.Collator})
}

// CompileProject parses the specification of a pipeline's $project stage:
// a projection without the find operators ($slice, $elemMatch and the
// positional "a.$" are expressions, or invalid paths, there), which must
// name at least one field.
func CompileProject(spec bson.Raw, opts Options) (*Projection, error) {
	if err := validate(spec); err != nil {
		return nil, err
	}
	if len(spec) <= 5 {
		return nil, mongoerr.New(mongoerr.Code(51272), "projection specification must have at least one field")
	}
	return compile(spec, parser{stage: true, now: opts.Now, coll: opts.Collator})
}

func validate(spec bson.Raw) error {
	if err := bsoncore.Document(spec).Validate(); err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid projection: %v", err)
	}
	return nil
}

func compile(spec bson.Raw, p parser) (*Projection, error) {
	// Computed literals point into the document.
	spec = bytes.Clone(spec)
	elems, _ := bsoncore.Document(spec).Elements()
	if len(elems) == 0 {
		return &Projection{}, nil
	}
	root := newNode()
	for _, e := range elems {
		if k := e.Key(); k == "_id" || len(k) > 4 && k[:4] == "_id." {
			p.idSpecified = true
		}
		if err := p.element(root, nil, e); err != nil {
			return nil, err
		}
	}
	if p.typ == undecided {
		p.typ = p.defaultType()
	}
	if p.typ == inclusion && !p.idSpecified {
		root.add(&child{name: "_id", kind: included})
	}
	if p.typ == exclusion && p.idIncluded {
		// {_id: 1} is allowed in an exclusion, where it changes nothing.
		root.remove("_id")
	}
	root.markComputed()
	return &Projection{root: root, typ: p.typ}, nil
}

// defaultType decides a projection made only of _id and find operators,
// with MongoDB's rules: $slice leaves other fields in unless _id is
// included, $elemMatch keeps only what it names, and otherwise {_id: 1}
// includes and {_id: 0} excludes.
func (p *parser) defaultType() projType {
	switch {
	case p.hasSlice:
		if p.idIncluded {
			return inclusion
		}
		return exclusion
	case p.hasElemMatch, p.idIncluded:
		return inclusion
	}
	return exclusion
}

// IsEmpty reports whether the projection returns documents unchanged.
func (p *Projection) IsEmpty() bool { return p.root == nil }

// Apply projects doc. positional is the index of the array element the
// query matched, which an "a.$" projection keeps, or -1. Computing a field
// can fail, as when it adds a string.
func (p *Projection) Apply(doc bson.Raw, positional int) (bson.Raw, error) {
	return p.ApplyContext(context.Background(), doc, positional)
}

// ApplyContext is Apply for a request: computing fields stops with ctx's
// error when ctx ends.
func (p *Projection) ApplyContext(ctx context.Context, doc bson.Raw, positional int) (bson.Raw, error) {
	if p.root == nil {
		return doc, nil
	}
	if err := bsoncore.Document(doc).Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid document: %v", err)
	}
	a := applier{ctx: ctx, root: bsoncore.Document(doc), positional: positional}
	switch p.typ {
	case inclusion:
		return a.include(p.root, a.root, true)
	case addition:
		return a.addFields(p.root, a.root)
	}
	return a.exclude(p.root, a.root), nil
}
