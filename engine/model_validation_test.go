package engine

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/validation"
	"github.com/lethedb/lethe/mongoerr"
)

// Collection validators in the model test: the generator sets, changes and
// removes a collection's validator, level and action, and some writes
// bypass it; the model checks written documents with the query matcher
// against the rules of schema validation, written out here on their own.

// validatorPool is every validator the generator sets: the fields are those
// of the generator's documents, so that writes fail them often. An empty
// one removes the validator; $where is refused.
var validatorPool = []bson.D{
	{{Key: "u", Value: bson.D{{Key: "$type", Value: "number"}}}},
	{{Key: "$jsonSchema", Value: bson.D{{Key: "required", Value: bson.A{"a"}}}}},
	{{Key: "$expr", Value: bson.D{{Key: "$lt", Value: bson.A{"$v", 2}}}}},
	{{Key: "$jsonSchema", Value: bson.D{{Key: "properties", Value: bson.D{{Key: "a", Value: bson.D{{Key: "bsonType", Value: "number"}}}}}}}},
	{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: false}}}}, bson.D{{Key: "u", Value: bson.D{{Key: "$gte", Value: 2}}}}}}},
	{},
	{{Key: "$where", Value: "true"}},
}

// setValidation is a collMod of the validation settings: a new validator,
// level or action, each or all; rarely an invalid level.
func (g *modelGen) setValidation(op *modelOp) {
	op.Kind = "setValidation"
	if g.r.Intn(5) != 0 {
		i := g.r.Intn(len(validatorPool))
		if i == len(validatorPool)-1 && g.r.Intn(3) != 0 {
			i = 0 // the refused one, less often
		}
		op.Validator = modelRaw(validatorPool[i])
	}
	if g.r.Intn(2) == 0 {
		op.Level = []string{validation.LevelStrict, validation.LevelModerate, validation.LevelOff, validation.LevelStrict, validation.LevelModerate, "lax"}[g.r.Intn(6)]
	}
	if g.r.Intn(2) == 0 || op.Validator == nil && op.Level == "" {
		op.Action = []string{validation.ActionError, validation.ActionError, validation.ActionWarn}[g.r.Intn(3)]
	}
}

// refValidation is a collection's validation settings as the model keeps
// them: the levels and actions as strings, the validator as a filter.
type refValidation struct {
	raw    bson.Raw // nil or empty: none
	filter *query.Filter
	level  string // "" is strict
	action string // "" is error
}

// set applies a collMod of the validation settings. Every part is checked
// before anything changes.
func (v *refValidation) set(validator bson.Raw, level, action string) error {
	next := *v
	if validator != nil {
		next.raw, next.filter = validator, nil
	}
	if level != "" {
		if level != validation.LevelStrict && level != validation.LevelModerate && level != validation.LevelOff {
			return refErr(mongoerr.BadValue)
		}
		next.level = level
	}
	if action != "" {
		if action != validation.ActionError && action != validation.ActionWarn {
			return refErr(mongoerr.BadValue)
		}
		next.action = action
	}
	if len(next.raw) > 5 {
		if _, err := next.raw.LookupErr("$where"); err == nil {
			return refErr(mongoerr.QueryFeatureNotAllowed)
		}
		f, err := query.Compile(next.raw)
		if err != nil {
			return err
		}
		next.filter = f
	}
	*v = next
	return nil
}

// check is the validator's verdict on writing doc, which replaces old (nil
// for an insert); an update that changes nothing is not checked. Strict
// checks every write, moderate lets an update of a
// document that already failed through, off checks nothing; warn writes
// anyway; bypass skips the check. tally, if set, counts the outcomes.
func (v *refValidation) check(doc, old bson.Raw, bypass bool, tally func(string)) error {
	count := func(what string) {
		if tally != nil {
			tally("outcome.validation." + what)
		}
	}
	switch {
	case v.filter == nil:
		return nil
	case bypass:
		count("bypassed")
		return nil
	case v.level == validation.LevelOff:
		count("off")
		return nil
	case v.filter.Match(doc):
		count("passed")
		return nil
	case old != nil && v.level == validation.LevelModerate && !v.filter.Match(old):
		count("moderateLetThrough")
		return nil
	case v.action == validation.ActionWarn:
		count("warned")
		return nil
	}
	count("refused")
	return refErr(mongoerr.DocumentValidationFailure)
}

func (r *modelRun) stepSetValidation(op *modelOp) error {
	ch := CollectionValidation{Validator: op.Validator}
	if op.Level != "" {
		ch.Level = &op.Level
	}
	if op.Action != "" {
		ch.Action = &op.Action
	}
	var err error
	if herr := r.guard("setValidation", func() { err = r.e.SetValidation(context.Background(), modelDB, modelColl, ch) }); herr != nil {
		return herr
	}
	var werr error
	if !r.m.exists {
		werr = refErr(mongoerr.NamespaceNotFound)
	} else {
		werr = r.m.val.set(op.Validator, op.Level, op.Action)
	}
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("setValidation: engine error %v, model code %d", err, codeOf(werr))
	}
	return nil
}

// checkFailingDocumentID checks that a DocumentValidationFailure names the
// document in its errInfo's failingDocumentId, when the document has an
// _id of its own.
func checkFailingDocumentID(err error, doc bson.Raw) error {
	me, ok := mongoerr.As(err)
	id, idErr := doc.LookupErr("_id")
	if !ok || me.Code != mongoerr.DocumentValidationFailure || idErr != nil {
		return nil
	}
	for _, x := range me.Extra {
		info, ok := x.Value.(bson.D)
		if x.Key != "errInfo" || !ok {
			continue
		}
		for _, f := range info {
			if f.Key != "failingDocumentId" {
				continue
			}
			got, ok := f.Value.(bson.RawValue)
			if !ok || !valuesEqual(rawIDValue(got), rawIDValue(id)) {
				return fmt.Errorf("errInfo.failingDocumentId %v, want %v", f.Value, id)
			}
			return nil
		}
	}
	return fmt.Errorf("DocumentValidationFailure without errInfo.failingDocumentId: %v", me.Extra)
}
