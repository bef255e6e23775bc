package engine

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// Schema validation: a collection's validator is a query filter that every
// document written must match. validationLevel says which writes are
// checked (strict: all; moderate: inserts, and updates of documents that
// matched before; off: none), validationAction what a failure does (error:
// refuse the write with DocumentValidationFailure; warn: log and write).

// Validation levels and actions as the create and collMod commands spell them.
const (
	ValidationStrict   = "strict"
	ValidationModerate = "moderate"
	ValidationOff      = "off"
	ValidationError    = "error"
	ValidationWarn     = "warn"
)

// docValidator is a collection's compiled validation settings.
type docValidator struct {
	raw    bson.Raw // the validator as given
	filter *query.Filter
	// usesNow says the validator may read $$NOW, which is the time of each
	// write: filter then holds the time of compilation, and each write
	// compiles the validator again (filterAt).
	usesNow bool
	level   string
	action  string
}

// filterAt is the validator's filter for a command started at now.
func (v *docValidator) filterAt(now time.Time) *query.Filter {
	if !v.usesNow {
		return v.filter
	}
	f, err := query.CompileWith(v.raw, query.Options{Now: now})
	if err != nil {
		// v.raw compiled before; only $$NOW differs.
		return v.filter
	}
	return f
}

// WriteOptions are per-command options of the write paths.
type WriteOptions struct {
	// BypassDocumentValidation skips the collection's validator.
	BypassDocumentValidation bool
	// Txn, when set, makes the insert a retryable write whose documents
	// are the statements StmtIDs (their ids, in order).
	Txn     *Txn
	StmtIDs []int32
}

// compileValidator reads the validation settings from a collection's
// options; nil if there is no validator or it is empty.
func compileValidator(options bson.Raw) (*docValidator, error) {
	v := &docValidator{level: ValidationStrict, action: ValidationError}
	if len(options) == 0 {
		return nil, nil
	}
	elems, err := options.Elements()
	if err != nil {
		return nil, fmt.Errorf("engine: collection options: %w", err)
	}
	for _, el := range elems {
		switch el.Key() {
		case "validator":
			doc, ok := el.Value().DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'validator' is the wrong type '%s', expected type 'object'", typeName(el.Value().Type))
			}
			v.raw = doc
		case "validationLevel":
			if v.level, err = enumOption("validationLevel", el.Value(), ValidationStrict, ValidationModerate, ValidationOff); err != nil {
				return nil, err
			}
		case "validationAction":
			if v.action, err = enumOption("validationAction", el.Value(), ValidationError, ValidationWarn); err != nil {
				return nil, err
			}
		}
	}
	if len(v.raw) <= 5 {
		return nil, nil
	}
	if err := checkValidatorOperators(v.raw); err != nil {
		return nil, err
	}
	if v.filter, err = query.Compile(v.raw); err != nil {
		return nil, err
	}
	v.usesNow = bytes.Contains(v.raw, []byte("$$NOW"))
	return v, nil
}

func enumOption(field string, v bson.RawValue, allowed ...string) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'string'", field, typeName(v.Type))
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '%s' is not a valid value.", s, field)
}

// checkValidatorOperators refuses the query operators MongoDB does not
// allow in a validator, which need a query context a write does not have.
func checkValidatorOperators(doc bson.Raw) error {
	elems, err := doc.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid validator: %v", err)
	}
	for _, el := range elems {
		switch el.Key() {
		case "$where", "$text", "$near", "$nearSphere", "$geoNear":
			return mongoerr.New(mongoerr.QueryFeatureNotAllowed, "%s is not allowed in collection validators", el.Key())
		case "$expr", "$jsonSchema":
			continue // their contents are not query operators
		}
		switch v := el.Value(); v.Type {
		case bson.TypeEmbeddedDocument:
			if err := checkValidatorOperators(v.Document()); err != nil {
				return err
			}
		case bson.TypeArray:
			if err := checkValidatorOperators(bson.Raw(v.Array())); err != nil {
				return err
			}
		}
	}
	return nil
}

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
func (e *Engine) SetValidation(db, coll string, ch CollectionValidation) error {
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
	return e.modifyOptions(db, coll, func(opts bson.D) (bson.D, error) {
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
		if _, err := compileValidator(raw); err != nil {
			return nil, err
		}
		return opts, nil
	}, entry)
}

// checkValidation applies the collection's validator to a document about
// to be written. old is the document it replaces, nil for an insert.
func (w *writer) checkValidation(doc bson.Raw, old bson.Raw) error {
	v := w.st.validator
	if v == nil || w.bypassValidation || v.level == ValidationOff {
		return nil
	}
	if w.validator == nil {
		if w.now.IsZero() {
			w.now = w.e.clock.Now()
		}
		w.validator = v.filterAt(w.now)
	}
	if w.validator.Match(doc) {
		return nil
	}
	// Under moderate, documents that already failed may stay failing.
	if old != nil && v.level == ValidationModerate && !w.validator.Match(old) {
		return nil
	}
	if v.action == ValidationWarn {
		w.e.log.Warn("Document would fail validation", zap.String("namespace", w.st.ns()),
			zap.Stringer("document", idOfRaw(doc)))
		return nil
	}
	err := mongoerr.New(mongoerr.DocumentValidationFailure, "Document failed validation")
	err.Extra = bson.D{{Key: "errInfo", Value: bson.D{
		{Key: "failingDocumentId", Value: idOfRaw(doc)},
		{Key: "details", Value: validationDetails(v.raw, doc)},
	}}}
	return err
}

func idOfRaw(doc bson.Raw) bson.RawValue {
	id := record.IDOf(doc)
	return bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}
}

// validationDetails explains a failure in the shape of MongoDB's errInfo
// details: the failing operator, and for several clauses or a $jsonSchema
// the parts that were not satisfied. It is a best effort: each clause is
// tested on its own.
func validationDetails(validator, doc bson.Raw) bson.D {
	elems, _ := validator.Elements()
	if len(elems) == 1 {
		return clauseDetails(elems[0], doc)
	}
	var failed bson.A
	for i, el := range elems {
		if !clauseMatches(el, doc) {
			failed = append(failed, bson.D{{Key: "index", Value: int32(i)}, {Key: "details", Value: clauseDetails(el, doc)}})
		}
	}
	return bson.D{{Key: "operatorName", Value: "$and"}, {Key: "clausesNotSatisfied", Value: nonNilA(failed)}}
}

func clauseMatches(el bson.RawElement, doc bson.Raw) bool {
	raw, err := bson.Marshal(bson.D{{Key: el.Key(), Value: el.Value()}})
	if err != nil {
		return false
	}
	f, err := query.Compile(raw)
	return err == nil && f.Match(doc)
}

// clauseDetails describes one top-level clause of a validator.
func clauseDetails(el bson.RawElement, doc bson.Raw) bson.D {
	key := el.Key()
	specified := bson.D{{Key: key, Value: el.Value()}}
	switch {
	case key == "$jsonSchema":
		d := bson.D{{Key: "operatorName", Value: "$jsonSchema"}}
		if schema, ok := el.Value().DocumentOK(); ok {
			d = append(d, bson.E{Key: "schemaRulesNotSatisfied", Value: schemaRulesNotSatisfied(schema, doc)})
		}
		return d
	case strings.HasPrefix(key, "$"):
		return bson.D{{Key: "operatorName", Value: key}, {Key: "specifiedAs", Value: specified}}
	}
	op := "$eq"
	if sub, ok := el.Value().DocumentOK(); ok {
		if first, err := sub.IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
			op = first.Key()
		}
	}
	d := bson.D{{Key: "operatorName", Value: op}, {Key: "specifiedAs", Value: specified}}
	if v, err := bsoncore.Document(doc).LookupErr(strings.Split(key, ".")...); err == nil {
		d = append(d, bson.E{Key: "reason", Value: "comparison failed"}, bson.E{Key: "consideredValue", Value: bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}})
	} else {
		d = append(d, bson.E{Key: "reason", Value: "field was missing"})
	}
	return d
}

// schemaRulesNotSatisfied lists the top-level keywords of a $jsonSchema
// that doc fails, with the missing properties of required and the failing
// properties of properties.
func schemaRulesNotSatisfied(schema, doc bson.Raw) bson.A {
	out := bson.A{}
	elems, _ := schema.Elements()
	for _, el := range elems {
		if schemaAccepts(bson.D{{Key: el.Key(), Value: el.Value()}}, doc) {
			continue
		}
		rule := bson.D{{Key: "operatorName", Value: el.Key()}}
		switch el.Key() {
		case "required":
			var missing bson.A
			vals, _ := el.Value().Array().Values()
			for _, v := range vals {
				if name, ok := v.StringValueOK(); ok {
					if _, err := bsoncore.Document(doc).LookupErr(name); err != nil {
						missing = append(missing, name)
					}
				}
			}
			rule = append(rule, bson.E{Key: "specifiedAs", Value: bson.D{{Key: "required", Value: el.Value()}}}, bson.E{Key: "missingProperties", Value: nonNilA(missing)})
		case "properties":
			var props bson.A
			if pdoc, ok := el.Value().DocumentOK(); ok {
				pelems, _ := pdoc.Elements()
				for _, p := range pelems {
					if !schemaAccepts(bson.D{{Key: "properties", Value: bson.D{{Key: p.Key(), Value: p.Value()}}}}, doc) {
						props = append(props, bson.D{{Key: "propertyName", Value: p.Key()}, {Key: "details", Value: propertyDetails(p, doc)}})
					}
				}
			}
			rule = append(rule, bson.E{Key: "propertiesNotSatisfied", Value: nonNilA(props)})
		default:
			rule = append(rule, bson.E{Key: "specifiedAs", Value: bson.D{{Key: el.Key(), Value: el.Value()}}})
		}
		out = append(out, rule)
	}
	return out
}

// propertyDetails lists the keywords of one property's schema that the
// document's value fails.
func propertyDetails(p bson.RawElement, doc bson.Raw) bson.A {
	out := bson.A{}
	sub, ok := p.Value().DocumentOK()
	if !ok {
		return out
	}
	elems, _ := sub.Elements()
	for _, kw := range elems {
		one := bson.D{{Key: "properties", Value: bson.D{{Key: p.Key(), Value: bson.D{{Key: kw.Key(), Value: kw.Value()}}}}}}
		if schemaAccepts(one, doc) {
			continue
		}
		d := bson.D{{Key: "operatorName", Value: kw.Key()}, {Key: "specifiedAs", Value: bson.D{{Key: kw.Key(), Value: kw.Value()}}}}
		if v, err := bsoncore.Document(doc).LookupErr(p.Key()); err == nil {
			d = append(d, bson.E{Key: "consideredValue", Value: bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}})
		}
		out = append(out, d)
	}
	return out
}

func schemaAccepts(schema bson.D, doc bson.Raw) bool {
	raw, err := bson.Marshal(bson.D{{Key: "$jsonSchema", Value: schema}})
	if err != nil {
		return true
	}
	f, err := query.Compile(raw)
	return err != nil || f.Match(doc)
}

func nonNilA(a bson.A) bson.A {
	if a == nil {
		return bson.A{}
	}
	return a
}
