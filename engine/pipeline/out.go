package pipeline

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// outStage is $out: the documents replace those of a collection, which
// keeps its indexes and options, or is created. The stage makes no
// documents.
type outStage struct {
	db, coll string
}

// writer marks the stages that write, which must come last.
type writer interface {
	writes() string
}

func (*outStage) writes() string { return "$out" }

// blocks: $out reads all its input before it writes. A pipeline that ends
// in it has read its source through by then, and replacing that source
// (an $out onto the collection read) kills no plan still reading it.
func (*outStage) blocks() {}

func compileOut(c *compiler, name string, arg bson.RawValue) (stage, error) {
	s := &outStage{db: c.opts.DB}
	switch arg.Type {
	case bson.TypeString:
		s.coll = arg.StringValue()
	case bson.TypeEmbeddedDocument:
		var err error
		if s.db, s.coll, err = namespaceSpec(arg.Document(), name, "db", "coll"); err != nil {
			return nil, err
		}
	default:
		return nil, mongoerr.New(mongoerr.Code(16990), "%s only supports a string or object argument, but found %s", name, values.TypeNameOf(arg))
	}
	if err := checkTarget(s.db, s.coll, name, 17385, 31321, "Can't"); err != nil {
		return nil, err
	}
	return s, nil
}

// namespaceSpec reads a {db, coll} document of $out or $merge's into.
func namespaceSpec(doc bson.Raw, stage, dbKey, collKey string) (string, string, error) {
	var db, coll string
	hasDB, hasColl := false, false
	elems, _ := doc.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case dbKey, collKey:
			s, ok := v.StringValueOK()
			if !ok {
				return "", "", mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'", stage, el.Key(), values.TypeNameOf(v))
			}
			if el.Key() == dbKey {
				db, hasDB = s, true
			} else {
				coll, hasColl = s, true
			}
		default:
			return "", "", mongoerr.New(mongoerr.Code(40415), "BSON field '%s.%s' is an unknown field.", stage, el.Key())
		}
	}
	switch {
	case !hasDB:
		return "", "", mongoerr.New(mongoerr.Code(40414), "BSON field '%s.%s' is missing but a required field", stage, dbKey)
	case !hasColl:
		return "", "", mongoerr.New(mongoerr.Code(40414), "BSON field '%s.%s' is missing but a required field", stage, collKey)
	}
	return db, coll, nil
}

// checkTarget refuses a collection a stage may not write: an invalid
// name, a system collection (code special) or one of the server's own
// databases (code internal).
func checkTarget(db, coll, stage string, special, internal mongoerr.Code, verb string) error {
	if db == "" || strings.ContainsAny(db, "/\\. \"$\x00") || checkCollName(db, coll, stage) != nil {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid %s target namespace, %s.%s", stage, db, coll)
	}
	if strings.HasPrefix(coll, "system.") {
		return mongoerr.New(special, "%s %s to special collection: %s", verb, stage, coll)
	}
	switch db {
	case "admin", "local", "config":
		return mongoerr.New(internal, "%s %s to internal database: %s", verb, stage, db)
	}
	return nil
}

func (s *outStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	if r.opts.Catalog == nil {
		return nil, noCatalog("$out")
	}
	if err := checkSizes(docs); err != nil {
		return nil, err
	}
	return nil, r.opts.Catalog.Out(r.ctx, s.db, s.coll, docs)
}

// checkWriters refuses a stage that writes anywhere but last.
func checkWriters(stages []stage) error {
	for i, st := range stages {
		if w, ok := st.(writer); ok && i != len(stages)-1 {
			return mongoerr.New(mongoerr.Code(40601), "%s can only be the final stage in the pipeline", w.writes())
		}
	}
	return nil
}
