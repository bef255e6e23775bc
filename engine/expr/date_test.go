package expr

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// The UTC offsets MongoDB reads as time zones: ±HH, ±HHMM and ±HH:MM.
func TestParseUTCOffset(t *testing.T) {
	tests := []struct {
		in   string
		secs int
		ok   bool
	}{
		{"+03", 3 * 3600, true},
		{"-0530", -(5*3600 + 30*60), true},
		{"+04:45", 4*3600 + 45*60, true},
		{"+00:00", 0, true},
		{"-00", 0, true},
		{"+3", 0, false},
		{"+045", 0, false},
		{"+04:5", 0, false},
		{"04:45", 0, false},
		{"+04-45", 0, false},
		{"+0a", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		secs, ok := parseUTCOffset(tt.in)
		if ok != tt.ok || ok && secs != tt.secs {
			t.Errorf("parseUTCOffset(%q) = %d, %v; want %d, %v", tt.in, secs, ok, tt.secs, tt.ok)
		}
	}
}

// A zero offset is UTC itself, whose $dateFromString accepts strings with
// their own offset; GMT, an Olson zone, is not.
func TestZoneUTC(t *testing.T) {
	for name, utc := range map[string]bool{"UTC": true, "+00": true, "-00:00": true, "GMT": false, "Etc/UTC": false, "+01": false} {
		z, err := parseZone(stringValue(name))
		if err != nil {
			t.Fatalf("parseZone(%q): %v", name, err)
		}
		if z.utc != utc {
			t.Errorf("parseZone(%q).utc = %v, want %v", name, z.utc, utc)
		}
	}
}

// $dateToString's result is bounded like every value an expression builds,
// though a format of wide specifiers writes more than its own length.
func TestDateToStringSizeLimit(t *testing.T) {
	format := strings.Repeat("%B", MaxValueBytes/len("September")+1)
	doc := raw(t, `{"d": {"$date": "2020-09-01T00:00:00Z"}}`)
	b := bsoncore.NewDocumentBuilder().
		StartDocument("$dateToString").
		AppendString("date", "$d").
		AppendString("format", format).
		FinishDocument().
		Build()
	ex, err := CompileExpr(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b})
	if err != nil {
		t.Fatal(err)
	}
	var got bsoncore.Value
	grew := heapGrowth(func() { got, err = ex.Eval(bson.Raw(doc)) })
	if mongoerr.CodeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Fatalf("Eval = %d bytes, %v; want BSONObjectTooLarge", len(got.Data), err)
	}
	if grew > 128<<20 {
		t.Errorf("Eval allocated %d MiB", grew>>20)
	}
}
