package values

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestDateAdd(t *testing.T) {
	ms := func(s string) int64 {
		var d struct{ D bson.DateTime }
		if err := bson.UnmarshalExtJSON([]byte(`{"D": {"$date": "`+s+`"}}`), false, &d); err != nil {
			t.Fatal(err)
		}
		return int64(d.D)
	}
	tests := []struct {
		from, unit string
		n          int64
		want       string
	}{
		{"2021-01-31T10:00:00Z", "month", 1, "2021-02-28T10:00:00Z"},
		{"2020-01-31T10:00:00Z", "month", 1, "2020-02-29T10:00:00Z"},
		{"2021-03-31T00:00:00Z", "month", -1, "2021-02-28T00:00:00Z"},
		{"2021-01-15T00:00:00Z", "month", -13, "2019-12-15T00:00:00Z"},
		{"2020-02-29T00:00:00Z", "year", 1, "2021-02-28T00:00:00Z"},
		{"2021-11-30T00:00:00Z", "quarter", 1, "2022-02-28T00:00:00Z"},
		{"2021-01-01T00:00:00Z", "day", -1, "2020-12-31T00:00:00Z"},
		{"2021-01-01T00:00:00Z", "week", 2, "2021-01-15T00:00:00Z"},
	}
	for _, tt := range tests {
		if got := DateAdd(time.UnixMilli(ms(tt.from)).UTC(), tt.unit, tt.n).UnixMilli(); got != ms(tt.want) {
			t.Errorf("%s + %d %s = %d, want %s", tt.from, tt.n, tt.unit, got, tt.want)
		}
	}
}
