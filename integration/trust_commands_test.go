package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// cmdCase is a raw command and the error MongoDB 7 answers it with; an
// empty name means the command succeeds.
type cmdCase struct {
	name string
	cmd  bson.D
	code int32
	// codeName, and a fragment of the message.
	codeName, msg string
}

func runCmdCases(t *testing.T, db *mongo.Database, cases []cmdCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.RunCommand(testCtx(t), c.cmd).Raw()
			if c.code == 0 {
				if err != nil {
					t.Fatalf("%v: %v", c.cmd, err)
				}
				return
			}
			ce := cmdError(t, db.Client(), db.Name(), c.cmd)
			wantError(t, ce, c.code, c.codeName)
			if !strings.Contains(ce.Message, c.msg) {
				t.Errorf("message %q, want it to contain %q", ce.Message, c.msg)
			}
		})
	}
}

// TestFindArgumentChecks: find's options fail as MongoDB 7's find parser
// fails them: counts are >= 0 (51024), options typed optionalBool take
// only booleans, document options take only documents, comment takes
// anything.
func TestFindArgumentChecks(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("args")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	find := func(extra ...bson.E) bson.D { return append(bson.D{{Key: "find", Value: "c"}}, extra...) }
	runCmdCases(t, db, []cmdCase{
		{"negative batchSize", find(bson.E{Key: "batchSize", Value: -1}), 51024, "Location51024", "BSON field 'batchSize' value must be >= 0, actual value '-1'"},
		{"negative skip", find(bson.E{Key: "skip", Value: int64(-2)}), 51024, "Location51024", "BSON field 'skip' value must be >= 0, actual value '-2'"},
		{"negative limit", find(bson.E{Key: "limit", Value: -1}), 51024, "Location51024", "BSON field 'limit' value must be >= 0, actual value '-1'"},
		{"string limit", find(bson.E{Key: "limit", Value: "1"}), 14, "TypeMismatch", "limit"},
		{"int singleBatch", find(bson.E{Key: "singleBatch", Value: 1}), 14, "TypeMismatch", "Field 'singleBatch' should be a boolean value, but found: int"},
		{"string allowDiskUse", find(bson.E{Key: "allowDiskUse", Value: "yes"}), 14, "TypeMismatch", "Field 'allowDiskUse' should be a boolean value, but found: string"},
		{"int noCursorTimeout", find(bson.E{Key: "noCursorTimeout", Value: 1}), 14, "TypeMismatch", "noCursorTimeout"},
		{"array filter", find(bson.E{Key: "filter", Value: bson.A{}}), 14, "TypeMismatch", "Expected field filterto be of type object"},
		{"string sort", find(bson.E{Key: "sort", Value: "a"}), 14, "TypeMismatch", "Expected field sortto be of type object"},
		{"int projection", find(bson.E{Key: "projection", Value: 1}), 14, "TypeMismatch", "Expected field projectionto be of type object"},
		{"string collation", find(bson.E{Key: "collation", Value: "simple"}), 14, "TypeMismatch", "Expected field collationto be of type object"},
		{"string maxTimeMS", find(bson.E{Key: "maxTimeMS", Value: "1"}), 2, "BadValue", "maxTimeMS must be a number"},
		{"negative maxTimeMS", find(bson.E{Key: "maxTimeMS", Value: -1}), 2, "BadValue", "-1 value for maxTimeMS is out of range"},
		{"fractional maxTimeMS", find(bson.E{Key: "maxTimeMS", Value: 1.5}), 2, "BadValue", "maxTimeMS has non-integral value"},
		{"decimal maxTimeMS", find(bson.E{Key: "maxTimeMS", Value: bson.NewDecimal128(0x3040000000000000, 1000)}), 0, "", ""},
		{"comment of any type", find(bson.E{Key: "comment", Value: bson.D{{Key: "why", Value: 1}}}), 0, "", ""},
		{"noCursorTimeout", find(bson.E{Key: "noCursorTimeout", Value: true}), 0, "", ""},
		{"allowPartialResults", find(bson.E{Key: "allowPartialResults", Value: true}), 0, "", ""},
		{"oplogReplay", find(bson.E{Key: "oplogReplay", Value: true}), 0, "", ""},
		{"zero counts", find(bson.E{Key: "skip", Value: 0}, bson.E{Key: "limit", Value: 0}, bson.E{Key: "batchSize", Value: 0}), 0, "", ""},
	})

	// The driver turns a negative limit into limit and singleBatch.
	cur, err := db.Collection("c").Find(testCtx(t), bson.D{}, options.Find().SetLimit(-1))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(testCtx(t), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("find with limit -1: %v %v", docs, err)
	}
}

// TestAggregateArgumentChecks: aggregate's cursor.batchSize is >= 0.
func TestAggregateArgumentChecks(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("args")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	agg := func(extra ...bson.E) bson.D {
		return append(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}}, extra...)
	}
	runCmdCases(t, db, []cmdCase{
		{"negative batchSize", agg(bson.E{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: -1}}}), 51024, "Location51024", "BSON field 'batchSize' value must be >= 0, actual value '-1'"},
		{"comment of any type", agg(bson.E{Key: "cursor", Value: bson.D{}}, bson.E{Key: "comment", Value: bson.A{1}}), 0, "", ""},
		{"int allowDiskUse", agg(bson.E{Key: "cursor", Value: bson.D{}}, bson.E{Key: "allowDiskUse", Value: 1}), 14, "TypeMismatch", "allowDiskUse"},
		{"int bypassDocumentValidation", agg(bson.E{Key: "cursor", Value: bson.D{}}, bson.E{Key: "bypassDocumentValidation", Value: 1}), 14, "TypeMismatch", "Field 'bypassDocumentValidation' should be a boolean value, but found: int"},
		{"explain false", agg(bson.E{Key: "cursor", Value: bson.D{}}, bson.E{Key: "explain", Value: false}), 0, "", ""},
		{"string explain", agg(bson.E{Key: "cursor", Value: bson.D{}}, bson.E{Key: "explain", Value: "yes"}), 14, "TypeMismatch", "explain"},
	})
}

// TestFindTailable: Lethe has no capped collections, so a tailable cursor
// is refused on every existing collection, as MongoDB refuses it on one that
// is not capped; the option combinations MongoDB rejects before looking at
// the collection are rejected too.
func TestFindTailable(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("tail")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	find := func(extra ...bson.E) bson.D { return append(bson.D{{Key: "find", Value: "c"}}, extra...) }
	runCmdCases(t, db, []cmdCase{
		{"tailable", find(bson.E{Key: "tailable", Value: true}), 2, "BadValue", "tailable cursor requested on non capped collection"},
		{"tailable awaitData", find(bson.E{Key: "tailable", Value: true}, bson.E{Key: "awaitData", Value: true}), 2, "BadValue", "tailable cursor requested on non capped collection"},
		{"awaitData alone", find(bson.E{Key: "awaitData", Value: true}), 9, "FailedToParse", "Cannot set 'awaitData' without also setting 'tailable'"},
		{"tailable sorted", find(bson.E{Key: "tailable", Value: true}, bson.E{Key: "sort", Value: bson.D{{Key: "a", Value: 1}}}), 2, "BadValue", "cannot use tailable option with a sort other than {$natural: 1}"},
		{"tailable singleBatch", find(bson.E{Key: "tailable", Value: true}, bson.E{Key: "singleBatch", Value: true}), 2, "BadValue", "cannot use tailable option with the 'singleBatch' option"},
		{"tailable false", find(bson.E{Key: "tailable", Value: false}), 0, "", ""},
		{"tailable on a missing collection", bson.D{{Key: "find", Value: "none"}, {Key: "tailable", Value: true}}, 0, "", ""},
	})

	// Through the driver's cursor type.
	_, err := db.Collection("c").Find(testCtx(t), bson.D{}, options.Find().SetCursorType(options.TailableAwait))
	wantCode(t, err, 2)
}

// TestHintNamesNoIndex: every command that takes a hint refuses one that
// names no index with BadValue, and a hint of the wrong type with
// FailedToParse; aggregate uses the hinted index for its leading stages.
func TestHintNamesNoIndex(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("hint")
	coll := db.Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}})
	if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	const noIndex = "hint provided does not correspond to an existing index"
	runCmdCases(t, db, []cmdCase{
		{"find by name", bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: "b_1"}}, 2, "BadValue", noIndex},
		{"find by pattern", bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: bson.D{{Key: "b", Value: 1}}}}, 2, "BadValue", noIndex},
		{"find wrong type", bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: 1}}, 9, "FailedToParse", "Hint must be a string or an object"},
		{"find empty hint", bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: bson.D{}}}, 0, "", ""},
		{"count", bson.D{{Key: "count", Value: "c"}, {Key: "hint", Value: "b_1"}}, 2, "BadValue", noIndex},
		{"distinct takes none in 7.0", bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}, {Key: "hint", Value: "a_1"}}, 40415, "Location40415", "BSON field 'distinct.hint' is an unknown field."},
		{"aggregate by name", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "hint", Value: "b_1"}}, 2, "BadValue", noIndex},
		{"aggregate by pattern", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "hint", Value: bson.D{{Key: "a", Value: -1}}}}, 2, "BadValue", noIndex},
		{"aggregate existing", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "hint", Value: "a_1"}}, 0, "", ""},
		{"findAndModify", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{}}, {Key: "remove", Value: true}, {Key: "hint", Value: "b_1"}}, 2, "BadValue", noIndex},
	})

	ctx := testCtx(t)
	_, err := coll.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateOne().SetHint("b_1"))
	wantCode(t, err, 2)
	_, err = coll.DeleteOne(ctx, bson.D{}, options.DeleteOne().SetHint(bson.D{{Key: "b", Value: 1}}))
	wantCode(t, err, 2)
	if n := count(t, coll, bson.D{}); n != 2 {
		t.Fatalf("%d documents after refused writes, want 2", n)
	}

	// A hinted sparse index reads only the documents it holds, as in
	// MongoDB: proof that aggregate scans the index it is told to.
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "s", Value: 1}}, Options: options.Index().SetSparse(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "s", Value: "x"}}}}); err != nil {
		t.Fatal(err)
	}
	for _, hint := range []any{"s_1", bson.D{{Key: "s", Value: 1}}} {
		cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{}}}}, options.Aggregate().SetHint(hint))
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil || len(docs) != 1 || docs[0]["_id"] != int32(2) {
			t.Fatalf("aggregate hinted %v: %v %v, want only _id 2", hint, docs, err)
		}
	}
	raw := run(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: "a_1"}}}})
	if !strings.Contains(raw.String(), "IXSCAN") {
		t.Fatalf("explain of hinted find: %s", raw)
	}
}

// findDocs runs a raw find command and returns its first batch.
func findDocs(t *testing.T, db *mongo.Database, cmd bson.D) []bson.Raw {
	t.Helper()
	raw := run(t, db, cmd)
	vals, err := raw.Lookup("cursor", "firstBatch").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]bson.Raw, len(vals))
	for i, v := range vals {
		docs[i] = v.Document()
	}
	return docs
}

func docStrings(docs []bson.Raw) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		var m bson.D
		if err := bson.Unmarshal(d, &m); err != nil {
			out[i] = d.String()
			continue
		}
		b, _ := bson.MarshalExtJSON(m, false, false)
		out[i] = string(b)
	}
	return out
}

func wantDocs(t *testing.T, got []bson.Raw, want ...string) {
	t.Helper()
	g := docStrings(got)
	if strings.Join(g, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", g, want)
	}
}

// TestFindReturnKey: returnKey answers the key of the plan's index, under
// the key pattern's names, and {} when no index is read.
func TestFindReturnKey(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("rk")
	coll := db.Collection("c")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 3}, {Key: "b", Value: "x"}, {Key: "c", Value: 9}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}, {Key: "b", Value: "y"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.A{5, 2}}, {Key: "b", Value: "z"}})
	if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	rk := bson.E{Key: "returnKey", Value: true}
	// An index scan: keys in index order, the multikey document by the
	// element the scan reached first.
	wantDocs(t, findDocs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1}}}}}, {Key: "hint", Value: "a_1_b_-1"}, rk}),
		`{"a":1,"b":"y"}`, `{"a":2,"b":"z"}`, `{"a":3,"b":"x"}`)
	wantDocs(t, findDocs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 4}}}}}, rk}),
		`{"a":5,"b":"z"}`)
	// The _id index.
	wantDocs(t, findDocs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 2}}}, rk}), `{"_id":2}`)
	// A collection scan has no key: empty documents, projection ignored.
	wantDocs(t, findDocs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "c", Value: 9}}}, {Key: "projection", Value: bson.D{{Key: "c", Value: 1}}}, rk}), `{}`)
	// Through the driver.
	cur, err := coll.Find(testCtx(t), bson.D{{Key: "a", Value: 1}}, options.Find().SetReturnKey(true))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.Raw
	for cur.Next(testCtx(t)) {
		got = append(got, append(bson.Raw(nil), cur.Current...))
	}
	wantDocs(t, got, `{"a":1,"b":"y"}`)

	runCmdCases(t, db, []cmdCase{
		{"returnKey int", bson.D{{Key: "find", Value: "c"}, {Key: "returnKey", Value: 1}}, 14, "TypeMismatch", "returnKey"},
		{"showRecordId", bson.D{{Key: "find", Value: "c"}, {Key: "showRecordId", Value: true}}, 238, "NotImplemented", "showRecordId"},
		{"showRecordId false", bson.D{{Key: "find", Value: "c"}, {Key: "showRecordId", Value: false}}, 0, "", ""},
	})
}

// TestFindMinMax: min and max bound the scan of the hinted index, min
// inclusive and max exclusive, with MongoDB's errors when they cannot.
func TestFindMinMax(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("mm")
	coll := db.Collection("c")
	for i := 1; i <= 6; i++ {
		mustInsert(t, coll, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i * 10}, {Key: "b", Value: 7 - i}})
	}
	if _, err := coll.Indexes().CreateMany(testCtx(t), []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}},
		{Keys: bson.D{{Key: "b", Value: -1}}},
	}); err != nil {
		t.Fatal(err)
	}
	idsOf := func(cmd bson.D) string {
		var out []string
		for _, d := range findDocs(t, db, cmd) {
			out = append(out, d.Lookup("_id").String())
		}
		return strings.Join(out, ",")
	}
	find := func(extra ...bson.E) bson.D { return append(bson.D{{Key: "find", Value: "c"}}, extra...) }
	minA := func(v int) bson.E { return bson.E{Key: "min", Value: bson.D{{Key: "a", Value: v}}} }
	maxA := func(v int) bson.E { return bson.E{Key: "max", Value: bson.D{{Key: "a", Value: v}}} }
	hintA := bson.E{Key: "hint", Value: bson.D{{Key: "a", Value: 1}}}

	for _, c := range []struct {
		cmd  bson.D
		want string
	}{
		{find(hintA, minA(20), maxA(50)), `{"$numberInt":"2"},{"$numberInt":"3"},{"$numberInt":"4"}`},
		{find(hintA, minA(25)), `{"$numberInt":"3"},{"$numberInt":"4"},{"$numberInt":"5"},{"$numberInt":"6"}`},
		{find(bson.E{Key: "hint", Value: "a_1"}, maxA(30)), `{"$numberInt":"1"},{"$numberInt":"2"}`},
		// The filter still applies within the bounds.
		{find(hintA, minA(20), maxA(50), bson.E{Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: 3}}}}}), `{"$numberInt":"2"},{"$numberInt":"4"}`},
		// A descending index: min comes first in its order, so min > max.
		{find(bson.E{Key: "hint", Value: "b_-1"}, bson.E{Key: "min", Value: bson.D{{Key: "b", Value: 5}}}, bson.E{Key: "max", Value: bson.D{{Key: "b", Value: 2}}}), `{"$numberInt":"2"},{"$numberInt":"3"},{"$numberInt":"4"}`},
		// The _id index.
		{find(bson.E{Key: "hint", Value: "_id_"}, bson.E{Key: "min", Value: bson.D{{Key: "_id", Value: 5}}}), `{"$numberInt":"5"},{"$numberInt":"6"}`},
	} {
		if got := idsOf(c.cmd); got != c.want {
			t.Errorf("%v: got _ids %s, want %s", c.cmd, got, c.want)
		}
	}

	// Through the driver.
	cur, err := coll.Find(testCtx(t), bson.D{}, options.Find().SetHint("a_1").SetMin(bson.D{{Key: "a", Value: 60}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(testCtx(t), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("driver find with min: %v %v", docs, err)
	}

	runCmdCases(t, db, []cmdCase{
		{"no hint", find(minA(20)), 51173, "Location51173", "When using min()/max() a hint of which index to use must be provided"},
		{"natural hint", find(bson.E{Key: "hint", Value: bson.D{{Key: "$natural", Value: 1}}}, minA(20)), 51173, "Location51173", "a hint of which index"},
		{"other index", find(bson.E{Key: "hint", Value: "b_-1"}, minA(20)), 51174, "Location51174", "The index chosen is not compatible with min/max"},
		{"extra field", find(hintA, bson.E{Key: "min", Value: bson.D{{Key: "a", Value: 1}, {Key: "z", Value: 1}}}), 51174, "Location51174", "not compatible"},
		{"min after max", find(hintA, minA(50), maxA(20)), 51175, "Location51175", "The value provided for min() does not come before the value provided for max() in the hinted index"},
		{"min equals max", find(hintA, minA(20), maxA(20)), 51175, "Location51175", "min()"},
		{"different fields", find(hintA, minA(20), bson.E{Key: "max", Value: bson.D{{Key: "b", Value: 1}}}), 51176, "Location51176", "min and max must have the same field names"},
		{"missing index", find(bson.E{Key: "hint", Value: "zz"}, minA(20)), 2, "BadValue", "hint provided does not correspond to an existing index"},
		{"min not a document", find(hintA, bson.E{Key: "min", Value: 1}), 14, "TypeMismatch", "Expected field minto be of type object"},
	})
}

// TestLetVariables: a command's let binds variables for $expr, for
// aggregation expressions and for update pipelines, each evaluated once;
// names follow $let's rules.
func TestLetVariables(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("let")
	coll := db.Collection("c")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "s", Value: "$$lim"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 5}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 9}})
	ctx := testCtx(t)
	let := bson.D{{Key: "lim", Value: bson.D{{Key: "$add", Value: bson.A{2, 2}}}}, {Key: "obj", Value: bson.D{{Key: "$literal", Value: bson.D{{Key: "k", Value: 7}}}}}}
	gtLim := bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{"$a", "$$lim"}}}}}

	// find: $expr sees the variable, under $or too; a plain equality with
	// "$$lim" still compares with the string.
	cur, err := coll.Find(ctx, gtLim, options.Find().SetLet(let))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 2 {
		t.Fatalf("find with let: %v %v", docs, err)
	}
	wantDocs(t, findDocs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "let", Value: let},
		{Key: "filter", Value: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "s", Value: "$$lim"}}, gtLim}}}},
		{Key: "projection", Value: bson.D{{Key: "k", Value: "$$obj.k"}, {Key: "l", Value: "$$lim"}}}}),
		`{"_id":1,"k":7,"l":4}`, `{"_id":2,"k":7,"l":4}`, `{"_id":3,"k":7,"l":4}`)

	// aggregate: $match's $expr and the expressions of later stages; an
	// inner $let that rebinds the name hides the command's variable.
	raw := run(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "cursor", Value: bson.D{}}, {Key: "let", Value: let},
		{Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$match", Value: gtLim}},
			bson.D{{Key: "$project", Value: bson.D{
				{Key: "d", Value: bson.D{{Key: "$subtract", Value: bson.A{"$a", "$$lim"}}}},
				{Key: "inner", Value: bson.D{{Key: "$let", Value: bson.D{{Key: "vars", Value: bson.D{{Key: "lim", Value: 100}}}, {Key: "in", Value: "$$lim"}}}}},
				{Key: "mapped", Value: bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: bson.A{1}}, {Key: "as", Value: "lim"}, {Key: "in", Value: "$$lim"}}}}},
			}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$$lim"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: "$d"}}}, {Key: "inner", Value: bson.D{{Key: "$max", Value: "$inner"}}}, {Key: "m", Value: bson.D{{Key: "$first", Value: "$mapped"}}}}}},
		}}})
	batch, _ := raw.Lookup("cursor", "firstBatch").Array().Values()
	var got []bson.Raw
	for _, v := range batch {
		got = append(got, v.Document())
	}
	wantDocs(t, got, `{"_id":4,"n":6,"inner":100,"m":[1]}`)

	// update: the filter's $expr and a pipeline update.
	res, err := coll.UpdateMany(ctx, gtLim, mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "b", Value: bson.D{{Key: "$multiply", Value: bson.A{"$a", "$$lim"}}}}}}}}, options.UpdateMany().SetLet(let))
	if err != nil || res.ModifiedCount != 2 {
		t.Fatalf("update with let: %+v %v", res, err)
	}
	wantIDs(t, coll, bson.D{{Key: "b", Value: 36}}, 3)
	// c, the constants of one statement, override let.
	run(t, db, bson.D{{Key: "update", Value: "c"}, {Key: "let", Value: let}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: "$$lim"}}}}}},
		{Key: "c", Value: bson.D{{Key: "lim", Value: "from c"}}},
	}}}})
	wantIDs(t, coll, bson.D{{Key: "b", Value: "from c"}}, 1)
	// c is for pipelines: refused on an operator update, and not seen by
	// the filter.
	_, err = db.RunCommand(ctx, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 1}}}}}, {Key: "c", Value: bson.D{{Key: "k", Value: 1}}}},
	}}}).Raw()
	wantCode(t, err, 51198)
	_, err = db.RunCommand(ctx, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$_id", "$$k"}}}}}}, {Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 1}}}}}}, {Key: "c", Value: bson.D{{Key: "k", Value: 1}}}},
	}}}).Raw()
	wantCode(t, err, 17276)

	// findAndModify and delete.
	var fam bson.M
	if err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$a", "$$five"}}}}},
		mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "f", Value: "$$five"}}}}},
		options.FindOneAndUpdate().SetLet(bson.D{{Key: "five", Value: 5}}).SetReturnDocument(options.After)).Decode(&fam); err != nil || fam["f"] != int32(5) {
		t.Fatalf("findAndModify with let: %v %v", fam, err)
	}
	del, err := coll.DeleteMany(ctx, gtLim, options.DeleteMany().SetLet(let))
	if err != nil || del.DeletedCount != 2 {
		t.Fatalf("delete with let: %+v %v", del, err)
	}
	wantIDs(t, coll, bson.D{}, 1)

	// $$NOW may be read in let, and is the server's clock.
	nowDocs := findDocs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "let", Value: bson.D{{Key: "t", Value: "$$NOW"}}},
		{Key: "projection", Value: bson.D{{Key: "t", Value: "$$t"}}}})
	if len(nowDocs) != 1 || !nowDocs[0].Lookup("t").Time().Equal(testEpoch) {
		t.Fatalf("let {t: $$NOW}: %v, want t = %v", nowDocs, testEpoch)
	}

	// A large variable used many times cannot multiply into unbounded
	// memory: the command fails instead.
	big := strings.Repeat("x", 1<<20)
	var proj bson.D
	for i := 0; i < 20; i++ {
		proj = append(proj, bson.E{Key: "f" + string(rune('a'+i)), Value: "$$big"})
	}
	ce := cmdError(t, ts.Client, "let", bson.D{{Key: "find", Value: "c"}, {Key: "let", Value: bson.D{{Key: "big", Value: big}}}, {Key: "projection", Value: proj}})
	wantError(t, ce, 10334, "BSONObjectTooLarge")

	find := func(letDoc any) bson.D {
		return bson.D{{Key: "find", Value: "c"}, {Key: "let", Value: letDoc}, {Key: "filter", Value: gtLim}}
	}
	runCmdCases(t, db, []cmdCase{
		{"empty name", find(bson.D{{Key: "", Value: 1}}), 16866, "Location16866", "Invalid 'let' parameter :: caused by :: empty variable names are not allowed"},
		{"upper case", find(bson.D{{Key: "Lim", Value: 1}}), 16867, "Location16867", "'Lim' starts with an invalid character for a user variable name"},
		{"NOW is read-only", find(bson.D{{Key: "NOW", Value: 1}}), 4738901, "Location4738901", "Attempt to set internal constant: NOW"},
		{"CLUSTER_TIME is read-only", find(bson.D{{Key: "CLUSTER_TIME", Value: 1}}), 4738901, "Location4738901", "Attempt to set internal constant: CLUSTER_TIME"},
		{"reads a field", find(bson.D{{Key: "v", Value: bson.D{{Key: "$add", Value: bson.A{"$a", 1}}}}}), 4890500, "Location4890500", "Command let Expression tried to access a field"},
		{"reads ROOT", find(bson.D{{Key: "v", Value: "$$ROOT"}}), 4890500, "Location4890500", "tried to access a field"},
		{"literal dollar string", find(bson.D{{Key: "lim", Value: bson.D{{Key: "$literal", Value: "$a"}}}}), 0, "", ""},
		{"bad character", find(bson.D{{Key: "li-m", Value: 1}}), 16868, "Location16868", "'li-m' contains an invalid character for a variable name: '-'"},
		{"not a document", find(5), 14, "TypeMismatch", "let"},
		{"undefined variable", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: gtLim}}, 17276, "Location17276", "Use of undefined variable: lim"},
		{"update let wrong type", bson.D{{Key: "update", Value: "c"}, {Key: "let", Value: "x"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{}}}}}}, 14, "TypeMismatch", "update.let"},
	})
}

// TestExplainHonoursOptions: explain plans what the command would run: the
// let variables of its filter, an aggregate's hint, a find's min/max.
func TestExplainHonoursOptions(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("ex")
	coll := db.Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}})
	if _, err := coll.Indexes().CreateOne(testCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	explain := func(inner bson.D) bson.Raw {
		return run(t, db, bson.D{{Key: "explain", Value: inner}, {Key: "verbosity", Value: "executionStats"}})
	}
	nReturned := func(r bson.Raw) int64 { return r.Lookup("executionStats", "nReturned").Int64() }
	out := explain(bson.D{{Key: "find", Value: "c"}, {Key: "let", Value: bson.D{{Key: "v", Value: 1}}},
		{Key: "filter", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$a", "$$v"}}}}}}})
	if nReturned(out) != 1 {
		t.Errorf("explain find with let: %s", out)
	}
	out = explain(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "hint", Value: "a_1"}})
	if !strings.Contains(out.String(), "IXSCAN") {
		t.Errorf("explain aggregate with hint: %s", out)
	}
	out = explain(bson.D{{Key: "find", Value: "c"}, {Key: "hint", Value: "a_1"}, {Key: "min", Value: bson.D{{Key: "a", Value: 2}}}})
	if nReturned(out) != 1 {
		t.Errorf("explain find with min: %s", out)
	}
}
