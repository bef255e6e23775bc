package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestArgumentErrorCodes checks the codes of argument errors of the read
// commands against MongoDB 7's parsers. Sources:
//   - maxTimeMS: a safeInt64 with "gte: 0" in aggregate_command.idl and a
//     safeInt64 in getmore_command.idl, so a wrong type is TypeMismatch (14)
//     and a negative aggregate value 51024; find's IDL type deserializes
//     with parseMaxTimeMS (find_command.idl), and commands that take it
//     only as a generic argument (generic_argument.idl, IDLAnyType) go
//     through parseMaxTimeMS too: BadValue (2).
//   - count's skip and limit: countParseSkip and countParseLimit in
//     src/mongo/db/query/count_request.cpp, BadValue for a non-number or
//     a fraction (parseIntegerElementToLong);
//   - getMore's collection, made a namespace and checked: an empty one is
//     InvalidNamespace (getmore_cmd.cpp).
//   - the cursor option: SimpleCursorOptions in cursor_response.idl, a
//     strict struct, so an unknown field is 40415.
func TestArgumentErrorCodes(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("test")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	agg := func(extra ...bson.E) bson.D {
		return append(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}, extra...)
	}
	for _, c := range []struct {
		name string
		cmd  bson.D
		code int // 0: the command succeeds
	}{
		{"find maxTimeMS string", bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: "1"}}, 2},
		{"find maxTimeMS negative", bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: -1}}, 2},
		{"find maxTimeMS fraction", bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: 1.5}}, 2},
		{"aggregate maxTimeMS string", agg(bson.E{Key: "maxTimeMS", Value: "1"}), 14},
		{"aggregate maxTimeMS bool", agg(bson.E{Key: "maxTimeMS", Value: true}), 14},
		{"aggregate maxTimeMS negative", agg(bson.E{Key: "maxTimeMS", Value: int64(-5)}), 51024},
		{"aggregate maxTimeMS beyond int32", agg(bson.E{Key: "maxTimeMS", Value: int64(1) << 40}), 2},
		{"getMore maxTimeMS string", bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: "1"}}, 14},
		{"count maxTimeMS string", bson.D{{Key: "count", Value: "c"}, {Key: "maxTimeMS", Value: "1"}}, 2},
		{"distinct maxTimeMS string", bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}, {Key: "maxTimeMS", Value: "1"}}, 2},
		{"count skip string", bson.D{{Key: "count", Value: "c"}, {Key: "skip", Value: "1"}}, 2},
		{"count limit string", bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: "1"}}, 2},
		{"count limit min long", bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: int64(-1 << 63)}}, 2},
		{"count limit negative", bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: -1}}, 0},
		{"count limit fraction", bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: 1.5}}, 2},
		{"count skip fraction", bson.D{{Key: "count", Value: "c"}, {Key: "skip", Value: 0.5}}, 2},
		{"count limit integral double", bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: 2.0}}, 0},
		{"getMore empty collection", bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: ""}}, 73},
		{"getMore no collection", bson.D{{Key: "getMore", Value: int64(5)}}, 40414},
		{"aggregate cursor unknown field", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{{Key: "size", Value: 1}}}}, 40415},
		{"listCollections cursor unknown field", bson.D{{Key: "listCollections", Value: 1}, {Key: "cursor", Value: bson.D{{Key: "size", Value: 1}}}}, 40415},
		{"find skip negative", bson.D{{Key: "find", Value: "c"}, {Key: "skip", Value: -1}}, 51024},
		{"getMore int32 id", bson.D{{Key: "getMore", Value: int32(5)}, {Key: "collection", Value: "c"}}, 14},
		{"killCursors int32 id", bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{int32(5)}}}, 14},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := db.RunCommand(ctx, c.cmd).Err()
			if c.code == 0 {
				if err != nil {
					t.Fatalf("%v: %v, want ok", c.cmd, err)
				}
				return
			}
			wantCode(t, err, c.code)
		})
	}
}

// TestCollationTypeErrorNamesTheCommand checks the wording of a collation
// of the wrong type: MongoDB's parsers name the command, as in "BSON field
// 'count.collation' is the wrong type 'string', expected type 'object'"
// (idl_parser.cpp, IDLParserContext::throwBadType).
func TestCollationTypeErrorNamesTheCommand(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("test")
	for cmd, body := range map[string]bson.D{
		"count":     {{Key: "count", Value: "c"}, {Key: "collation", Value: "fr"}},
		"distinct":  {{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}, {Key: "collation", Value: "fr"}},
		"aggregate": {{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "collation", Value: "fr"}},
		"create":    {{Key: "create", Value: "d"}, {Key: "collation", Value: "fr"}},
	} {
		err := db.RunCommand(ctx, body).Err()
		wantCode(t, err, 14)
		want := "BSON field '" + cmd + ".collation' is the wrong type 'string', expected type 'object'"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cmd, err, want)
		}
	}
}
