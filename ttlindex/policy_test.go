package ttlindex

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// value returns x encoded as a client would send it, as the value of a field.
func value(t *testing.T, x any) bsoncore.Value {
	t.Helper()
	return bsoncore.Document(marshal(t, bson.D{{Key: "v", Value: x}})).Lookup("v")
}

func marshal(t *testing.T, doc bson.D) bsoncore.Document {
	t.Helper()
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatalf("marshal %v: %v", doc, err)
	}
	return raw
}

func decimal(t *testing.T, s string) bson.Decimal128 {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatalf("parse decimal %q: %v", s, err)
	}
	return d
}

func TestParseDocTTL(t *testing.T) {
	tests := []struct {
		name  string
		x     any
		want  DocTTL
		valid bool
	}{
		{"double 20.0", 20.0, 20, true},
		{"NumberInt(20)", int32(20), 20, true},
		{"NumberLong(20)", int64(20), 20, true},
		{"-1", int32(-1), Never, true},
		{"NumberLong(-1)", int64(-1), Never, true},
		{"double -1.0", -1.0, Never, true},
		{"1", int32(1), 1, true},
		{"MaxInt32", int32(math.MaxInt32), math.MaxInt32, true},
		{"NumberLong(MaxInt32)", int64(math.MaxInt32), math.MaxInt32, true},
		{"double 2147483647.0", 2147483647.0, math.MaxInt32, true},

		{"20.5", 20.5, NoTTL, false},
		{"tiny fraction", 1e-300, NoTTL, false},
		{"NumberLong(2147483649)", int64(2147483649), NoTTL, false},
		{"NumberLong(2147483648)", int64(2147483648), NoTTL, false},
		{"double 2147483648.0", 2147483648.0, NoTTL, false},
		{"0", int32(0), NoTTL, false},
		{"NumberLong(0)", int64(0), NoTTL, false},
		{"double -0.0", math.Copysign(0, -1), NoTTL, false},
		{"-2", int32(-2), NoTTL, false},
		{"MinInt32", int32(math.MinInt32), NoTTL, false},
		{"NumberLong(MinInt64)", int64(math.MinInt64), NoTTL, false},
		{"NaN", math.NaN(), NoTTL, false},
		{"+Inf", math.Inf(1), NoTTL, false},
		{"-Inf", math.Inf(-1), NoTTL, false},
		{"string", "20", NoTTL, false},
		{"null", nil, NoTTL, false},
		{"array", bson.A{int32(20)}, NoTTL, false},
		{"nested document", bson.D{{Key: "ttl", Value: int32(20)}}, NoTTL, false},
		{"bool", true, NoTTL, false},
		{"decimal", decimal(t, "20"), NoTTL, false},
		{"date", bson.DateTime(20), NoTTL, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, valid := ParseDocTTL(value(t, tt.x))
			if got != tt.want || valid != tt.valid {
				t.Errorf("ParseDocTTL(%v) = %d, %v; want %d, %v", tt.x, got, valid, tt.want, tt.valid)
			}
		})
	}
}

func TestDocTTLOf(t *testing.T) {
	tests := []struct {
		name string
		doc  bsoncore.Document
		want DocTTL
	}{
		{"root ttl", marshal(t, bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: int32(20)}}), 20},
		{"root ttl -1", marshal(t, bson.D{{Key: "ttl", Value: -1.0}}), Never},
		{"missing", marshal(t, bson.D{{Key: "_id", Value: 1}}), NoTTL},
		{"empty", marshal(t, bson.D{}), NoTTL},
		{"invalid value", marshal(t, bson.D{{Key: "ttl", Value: 20.5}}), NoTTL},
		{"other case", marshal(t, bson.D{{Key: "TTL", Value: int32(20)}}), NoTTL},
		{"nested", marshal(t, bson.D{{Key: "a", Value: bson.D{{Key: "ttl", Value: int32(20)}}}}), NoTTL},
		{"dotted name", marshal(t, bson.D{{Key: "ttl.x", Value: int32(20)}}), NoTTL},
		{"malformed document", bsoncore.Document{1, 2}, NoTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DocTTLOf(tt.doc); got != tt.want {
				t.Errorf("DocTTLOf(%v) = %d, want %d", tt.doc, got, tt.want)
			}
		})
	}
}

func TestLifetimeMatrix(t *testing.T) {
	const ts = int64(1_700_000_000_123)
	off := Setting{}
	defaultNever := Setting{Enabled: true, Default: Never}
	default60 := Setting{Enabled: true, Default: 60}
	tests := []struct {
		name    string
		setting Setting
		doc     DocTTL
		want    int64 // seconds; 0 for never
	}{
		{"no index, no ttl", off, NoTTL, 0},
		{"no index, ttl -1", off, Never, 0},
		{"no index, ttl 20", off, 20, 0},
		{"default -1, no ttl", defaultNever, NoTTL, 0},
		{"default -1, ttl -1", defaultNever, Never, 0},
		{"default -1, ttl 20", defaultNever, 20, 20},
		{"default 60, no ttl", default60, NoTTL, 60},
		{"default 60, ttl -1", default60, Never, 0},
		{"default 60, ttl 20", default60, 20, 20},
		{"default 60, ttl MaxInt32", default60, math.MaxInt32, math.MaxInt32},
		{"invalid default 0", Setting{Enabled: true}, NoTTL, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seconds, ok := Lifetime(tt.setting, tt.doc)
			if ok != (tt.want != 0) || seconds != tt.want {
				t.Fatalf("Lifetime = %d, %v; want %d", seconds, ok, tt.want)
			}
			at, ok := ExpireAt(tt.setting, ts, tt.doc)
			if tt.want == 0 {
				if ok {
					t.Fatalf("ExpireAt = %d, want never", at)
				}
				if Expired(tt.setting, ts, tt.doc, math.MaxInt64) {
					t.Fatal("Expired at the end of time, want never")
				}
				return
			}
			if want := ts + tt.want*1000; !ok || at != want {
				t.Fatalf("ExpireAt = %d, %v; want %d", at, ok, want)
			}
			if Expired(tt.setting, ts, tt.doc, at-1) {
				t.Error("expired 1ms before ts+lifetime")
			}
			if !Expired(tt.setting, ts, tt.doc, at) {
				t.Error("not expired at ts+lifetime")
			}
		})
	}
}

func TestExpireAtSaturates(t *testing.T) {
	at, ok := ExpireAt(Setting{Enabled: true, Default: 60}, math.MaxInt64-1000, NoTTL)
	if !ok || at != math.MaxInt64 {
		t.Fatalf("ExpireAt near the end of time = %d, %v; want MaxInt64", at, ok)
	}
	if at, _ := ExpireAt(Setting{Enabled: true, Default: 60}, -120_000, NoTTL); at != -60_000 {
		t.Fatalf("ExpireAt before the epoch = %d, want -60000", at)
	}
}
