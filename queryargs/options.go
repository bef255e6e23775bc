package queryargs

import (
	"bytes"
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// naturalAscending is the one sort a tailable cursor may ask for.
var naturalAscending, _ = bson.Marshal(bson.D{{Key: "$natural", Value: int32(1)}})

// CheckTailable applies MongoDB's rules for tailable cursors. Lethe has no
// capped collections, so a tailable find on an existing collection is
// always refused, as MongoDB refuses it on a collection that is not capped;
// on a missing collection it finds nothing, as MongoDB does.
func CheckTailable(eng *engine.Engine, db, coll string, spec engine.FindSpec, tailable, awaitData, single bool) error {
	if awaitData && !tailable {
		return mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	}
	if !tailable {
		return nil
	}
	if len(spec.Sort) > 5 && !sameNaturalSort(spec.Sort) {
		return mongoerr.New(mongoerr.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
	}
	if single {
		return mongoerr.New(mongoerr.BadValue, "cannot use tailable option with the 'singleBatch' option")
	}
	if eng.CollectionExists(context.TODO(), db, coll) {
		return mongoerr.New(mongoerr.BadValue, "error processing query: ns=%s.%s tailable cursor requested on non capped collection", db, coll)
	}
	return nil
}

// sameNaturalSort reports whether sort is {$natural: 1}, with 1 of any
// numeric type, as MongoDB compares it.
func sameNaturalSort(sort bson.Raw) bool {
	if bytes.Equal(sort, naturalAscending) {
		return true
	}
	elems, err := sort.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$natural" {
		return false
	}
	f, ok := elems[0].Value().AsFloat64OK()
	return ok && f == 1
}

// CheckCursorBatchSize fails a negative cursor.batchSize of aggregate the
// way MongoDB's parser does, before cursor.Option reads the rest.
func CheckCursorBatchSize(cursor bson.RawValue) error {
	d, ok := cursor.DocumentOK()
	if !ok {
		return nil
	}
	v, err := d.LookupErr("batchSize")
	if err != nil {
		return nil
	}
	if n, err := command.Int64("aggregate", "cursor.batchSize", v); err == nil && n < 0 {
		return mongoerr.New(command.CodeOutOfRange, "BSON field 'batchSize' value must be >= 0, actual value '%d'", n)
	}
	return nil // cursor.Option reports a wrong type
}

// refuseShowRecordID refuses showRecordId: true. MongoDB reports the
// storage engine's record id of each document; Lethe stores documents by
// _id and has no record ids, and an invented number that a client could
// not use to resume or compare would be a lie.
func refuseShowRecordID(v bson.RawValue) error {
	show, err := command.StrictBool("showRecordId", v)
	if err != nil || !show {
		return err
	}
	return mongoerr.New(mongoerr.NotImplemented, "showRecordId is not supported: Lethe stores documents by _id and has no record ids")
}

// CheckMinMax applies the check MongoDB makes of min and max before
// planning: given both, they name the same fields in the same order.
func CheckMinMax(minDoc, maxDoc bson.Raw) error {
	if len(minDoc) <= 5 || len(maxDoc) <= 5 {
		return nil
	}
	lo, _ := minDoc.Elements()
	hi, _ := maxDoc.Elements()
	same := len(lo) == len(hi)
	for i := 0; same && i < len(lo); i++ {
		same = lo[i].Key() == hi[i].Key()
	}
	if !same {
		return mongoerr.New(51176, "min and max must have the same field names")
	}
	return nil
}

// Let reads a command's let: a document of variables, evaluated now by
// clk.
func Let(cmd string, v bson.RawValue, clk clock.Clock) (*engine.Let, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, command.WrongType(cmd, "let", v.Type, "object")
	}
	return engine.ParseLet(d, clk.Now())
}
