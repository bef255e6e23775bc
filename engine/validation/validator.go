package validation

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// Validation levels and actions as the create and collMod commands spell them.
const (
	LevelStrict   = "strict"
	LevelModerate = "moderate"
	LevelOff      = "off"
	ActionError   = "error"
	ActionWarn    = "warn"
)

// Validator is a collection's compiled validation settings.
type Validator struct {
	Raw    bson.Raw // the validator as given
	Filter *query.Filter
	// UsesNow says the validator may read $$NOW, which is the time of each
	// write: Filter then holds the time of compilation, and each write
	// compiles the validator again (FilterAt).
	UsesNow bool
	Level   string // LevelStrict, LevelModerate or LevelOff
	Action  string // ActionError or ActionWarn
	// coll is the collection's default collation, which the validator's
	// comparisons of strings are made under, as mongod's are.
	coll *collation.Collator
}

// FilterAt is the validator's filter for a command started at now.
func (v *Validator) FilterAt(now time.Time) *query.Filter {
	if !v.UsesNow {
		return v.Filter
	}
	f, err := query.CompileWith(v.Raw, query.Options{Now: now, Collator: v.coll})
	if err != nil {
		// v.Raw compiled before; only $$NOW differs.
		return v.Filter
	}
	return f
}

// Compile reads the validation settings from a collection's options
// (create, collMod); nil if there is no validator or it is empty.
func Compile(options bson.Raw) (*Validator, error) {
	v := &Validator{Level: LevelStrict, Action: ActionError}
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
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'validator' is the wrong type '%s', expected type 'object'", bsonvalue.TypeName(bsoncore.Type(el.Value().Type)))
			}
			v.Raw = doc
		case "validationLevel":
			if v.Level, err = enumOption("validationLevel", el.Value(), LevelStrict, LevelModerate, LevelOff); err != nil {
				return nil, err
			}
		case "validationAction":
			if v.Action, err = enumOption("validationAction", el.Value(), ActionError, ActionWarn); err != nil {
				return nil, err
			}
		case "collation":
			// Checked by create, which stores it normalised.
			if doc, ok := el.Value().DocumentOK(); ok {
				v.coll, _ = collation.Parse(doc)
			}
		}
	}
	if len(v.Raw) <= 5 {
		return nil, nil
	}
	if err := checkOperators(v.Raw); err != nil {
		return nil, err
	}
	if v.Filter, err = query.CompileWith(v.Raw, query.Options{Collator: v.coll}); err != nil {
		return nil, err
	}
	v.UsesNow = bytes.Contains(v.Raw, []byte("$$NOW"))
	return v, nil
}

func enumOption(field string, v bson.RawValue, allowed ...string) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'string'", field, bsonvalue.TypeName(bsoncore.Type(v.Type)))
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '%s' is not a valid value.", s, field)
}

// checkOperators refuses the query operators MongoDB does not
// allow in a validator, which need a query context a write does not have.
func checkOperators(doc bson.Raw) error {
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
			if err := checkOperators(v.Document()); err != nil {
				return err
			}
		case bson.TypeArray:
			if err := checkOperators(bson.Raw(v.Array())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Details explains a failure in the shape of MongoDB's errInfo
// details: the failing operator, and for several clauses or a $jsonSchema
// the parts that were not satisfied. It is a best effort: each clause is
// tested on its own.
func Details(validator, doc bson.Raw) bson.D {
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
