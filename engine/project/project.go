package project

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// Projection is a compiled find projection. It is safe for concurrent use.
type Projection struct {
	root      *node // nil for the empty projection
	inclusion bool
}

// Compile parses a find projection document. Errors carry MongoDB's codes.
// The projection keeps its own copy of the document.
func Compile(spec bson.Raw) (*Projection, error) {
	if err := bsoncore.Document(spec).Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid projection: %v", err)
	}
	// Computed literals point into the document.
	spec = bytes.Clone(spec)
	elems, _ := bsoncore.Document(spec).Elements()
	if len(elems) == 0 {
		return &Projection{}, nil
	}
	var p parser
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
	return &Projection{root: root, inclusion: p.typ == inclusion}, nil
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
// query matched, which an "a.$" projection keeps, or -1.
func (p *Projection) Apply(doc bson.Raw, positional int) (bson.Raw, error) {
	if p.root == nil {
		return doc, nil
	}
	if err := bsoncore.Document(doc).Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid document: %v", err)
	}
	a := applier{root: bsoncore.Document(doc), positional: positional}
	if p.inclusion {
		return a.include(p.root, a.root, true)
	}
	return a.exclude(p.root, a.root), nil
}
