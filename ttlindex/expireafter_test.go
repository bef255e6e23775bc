package ttlindex

import (
	"math"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

func TestParseTSExpireAfter(t *testing.T) {
	tests := []struct {
		name string
		x    any
		want int32
		ok   bool
	}{
		{"-1", int32(-1), Never, true},
		{"NumberLong(-1)", int64(-1), Never, true},
		{"double -1.0", -1.0, Never, true},
		{"1", int32(1), 1, true},
		{"NumberLong(3600)", int64(3600), 3600, true},
		{"double 60.0", 60.0, 60, true},
		{"MaxInt32", int32(math.MaxInt32), math.MaxInt32, true},
		{"double 2147483647.0", 2147483647.0, math.MaxInt32, true},

		{"0", int32(0), 0, false},
		{"double 0.0", 0.0, 0, false},
		{"-2", int32(-2), 0, false},
		{"fraction", 20.5, 0, false},
		{"fraction below 1", 0.5, 0, false},
		{"negative fraction", -1.5, 0, false},
		{"NumberLong(2147483648)", int64(2147483648), 0, false},
		{"double 2147483648.0", 2147483648.0, 0, false},
		{"NumberLong(MinInt64)", int64(math.MinInt64), 0, false},
		{"NaN", math.NaN(), 0, false},
		{"+Inf", math.Inf(1), 0, false},
		{"string", "60", 0, false},
		{"null", nil, 0, false},
		{"bool", true, 0, false},
		{"array", bson.A{int32(60)}, 0, false},
		{"decimal", decimal(t, "60"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTSExpireAfter(value(t, tt.x))
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("ParseTSExpireAfter(%v) = %d, %v; want %d", tt.x, got, err, tt.want)
				}
				return
			}
			wantError(t, err, mongoerr.BadValue, "_ts")
		})
	}
}

func TestParseDateExpireAfter(t *testing.T) {
	tests := []struct {
		name string
		x    any
		want int32
		ok   bool
		msg  string // part of the error message
	}{
		{"0", int32(0), 0, true, ""},
		{"3600", int32(3600), 3600, true, ""},
		{"NumberLong(3600)", int64(3600), 3600, true, ""},
		{"double 3600.0", 3600.0, 3600, true, ""},
		{"fraction truncates", 10000.7, 10000, true, ""},
		{"small negative fraction truncates to 0", -0.5, 0, true, ""},
		{"MaxInt32", int32(math.MaxInt32), math.MaxInt32, true, ""},
		{"fraction above MaxInt32 truncates", 2147483647.5, math.MaxInt32, true, ""},
		{"decimal", decimal(t, "3600"), 3600, true, ""},
		{"decimal with exponent", decimal(t, "36E2"), 3600, true, ""},
		{"decimal fraction", decimal(t, "3600.9"), 3600, true, ""},

		{"-1", int32(-1), 0, false, "negative"},
		{"NumberLong(-1)", int64(-1), 0, false, "negative"},
		{"-1.5", -1.5, 0, false, "negative"},
		{"-Inf", math.Inf(-1), 0, false, "negative"},
		{"decimal -1", decimal(t, "-1"), 0, false, "negative"},
		{"NumberLong(2147483648)", int64(2147483648), 0, false, "at most"},
		{"double 2147483648.0", 2147483648.0, 0, false, "at most"},
		{"NumberLong(MaxInt64)", int64(math.MaxInt64), 0, false, "at most"},
		{"double 9223372036854775808", 9223372036854775808.0, 0, false, "at most"},
		{"+Inf", math.Inf(1), 0, false, "at most"},
		{"decimal huge", decimal(t, "1E+6000"), 0, false, "at most"},
		{"decimal +Inf", decimal(t, "Infinity"), 0, false, "at most"},
		{"NaN", math.NaN(), 0, false, "NaN"},
		{"decimal NaN", decimal(t, "NaN"), 0, false, "NaN"},
		{"string", "60", 0, false, "string"},
		{"null", nil, 0, false, "null"},
		{"bool", true, 0, false, "boolean"},
		{"date", bson.DateTime(60), 0, false, "datetime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDateExpireAfter(value(t, tt.x))
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("ParseDateExpireAfter(%v) = %d, %v; want %d", tt.x, got, err, tt.want)
				}
				return
			}
			wantError(t, err, mongoerr.CannotCreateIndex, tt.msg)
		})
	}
}

func wantError(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	e, ok := mongoerr.As(err)
	if !ok {
		t.Fatalf("error = %v, want a *mongoerr.Error with code %v", err, code)
	}
	if e.Code != code {
		t.Errorf("code = %v, want %v (%s)", e.Code, code, e.Msg)
	}
	if !strings.Contains(e.Msg, "expireAfterSeconds") || !strings.Contains(e.Msg, msg) {
		t.Errorf("message %q should name expireAfterSeconds and contain %q", e.Msg, msg)
	}
}
