package bsonvalue

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestTruthyDecimal(t *testing.T) {
	for s, want := range map[string]bool{
		"0": false, "0.00": false, "-0": false, "0E+10": false,
		"1": true, "0.001": true, "-1E-20": true, "NaN": true, "Infinity": true, "-Infinity": true,
	} {
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			t.Fatal(err)
		}
		hi, lo := d.GetBytes()
		v := bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
		if got := Truthy(v); got != want {
			t.Errorf("Truthy(%s) = %v, want %v", s, got, want)
		}
	}
}
