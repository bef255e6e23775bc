package expr

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// evalCode compiles and evaluates an expression against doc, returning the
// error's code.
func evalErr(t *testing.T, doc bson.Raw, expr string) error {
	t.Helper()
	e, err := CompileExpr(value(t, expr))
	if err != nil {
		t.Fatalf("CompileExpr(%.80s): %v", expr, err)
	}
	_, err = e.Eval(doc)
	return err
}

// bigDoc has a string field s of n bytes.
func bigDoc(t *testing.T, n int) bson.Raw {
	doc, err := bson.Marshal(bson.D{{Key: "s", Value: strings.Repeat("x", n)}})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// heapGrowth runs f and returns how many bytes it allocated.
func heapGrowth(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestExprValueSizeLimit(t *testing.T) {
	doc := raw(t, `{"a": 1}`)
	doubling := func(in string) string {
		return fmt.Sprintf(`{"$reduce": {"input": {"$range": [0, 40]}, "initialValue": %s, "in": %s}}`, in, map[string]string{
			`"ab"`: `{"$concat": ["$$value", "$$value"]}`,
			`[1]`:  `{"$concatArrays": ["$$value", "$$value"]}`,
			`{}`:   `{"x": "$$value", "y": "$$value"}`,
			`"cd"`: `["$$value", "$$value"]`,
		}[in])
	}
	tests := map[string]mongoerr.Code{
		doubling(`"ab"`): mongoerr.BSONObjectTooLarge,
		doubling(`[1]`):  mongoerr.BSONObjectTooLarge,
		doubling(`{}`):   mongoerr.BSONObjectTooLarge,
		doubling(`"cd"`): mongoerr.BSONObjectTooLarge,
		// $range checks MongoDB's estimate of its memory first.
		`{"$range": [0, 2000000000]}`: mongoerr.ExceededMemoryLimit,
		`{"$range": [0, 3000000]}`:    mongoerr.BSONObjectTooLarge,
		// Each element of $map's result is small, but not all of them.
		`{"$map": {"input": {"$range": [0, 100000]}, "in": "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"}}`: mongoerr.BSONObjectTooLarge,
	}
	for expr, code := range tests {
		var err error
		grew := heapGrowth(func() { err = evalErr(t, doc, expr) })
		if mongoerr.CodeOf(err) != code {
			t.Errorf("Eval(%.60s) = %v, want code %d", expr, err, code)
		}
		// A value is refused before it passes the limit by much.
		if grew > 256<<20 {
			t.Errorf("Eval(%.60s) allocated %d MiB", expr, grew>>20)
		}
	}
}

func TestExprValueSizeAllowed(t *testing.T) {
	// Values up to 16 MiB are built: a string of 2^23 bytes, then one of
	// 15 MiB.
	doc := raw(t, `{"a": 1}`)
	for expr, want := range map[string]int{
		`{"$reduce": {"input": {"$range": [0, 22]}, "initialValue": "ab", "in": {"$concat": ["$$value", "$$value"]}}}`: 1 << 23,
		`{"$strLenBytes": {"$concat": [{"$reduce": {"input": {"$range": [0, 22]}, "initialValue": "ab", "in": {"$concat": ["$$value", "$$value"]}}}, {"$substrBytes": [{"$reduce": {"input": {"$range": [0, 22]}, "initialValue": "ab", "in": {"$concat": ["$$value", "$$value"]}}}, 0, 7340032]}]}}`: 15 << 20,
	} {
		e, err := CompileExpr(value(t, expr))
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.Eval(doc)
		if err != nil {
			t.Fatalf("Eval(%.60s): %v", expr, err)
		}
		n := len(v.Data) - 5
		if v.Type == bsoncore.TypeInt32 {
			n = int(v.Int32())
		}
		if n != want {
			t.Errorf("Eval(%.60s) has %d bytes, want %d", expr, n, want)
		}
	}
}

func TestExprHeldValuesLimit(t *testing.T) {
	// Eleven values of 10 MiB, each within the limit, are too much held
	// at once: the arguments of $max, or the variables of a $let.
	doc := bigDoc(t, 5<<20)
	twice := `{"$concat": ["$s", "$s"]}`
	args := strings.TrimSuffix(strings.Repeat(twice+", ", 11), ", ")
	vars := ""
	for i := range 11 {
		vars += fmt.Sprintf(`"v%d": %s, `, i, twice)
	}
	for _, expr := range []string{
		`{"$max": [` + args + `]}`,
		`{"$let": {"vars": {` + strings.TrimSuffix(vars, ", ") + `}, "in": 1}}`,
	} {
		if err := evalErr(t, doc, expr); mongoerr.CodeOf(err) != mongoerr.ExceededMemoryLimit {
			t.Errorf("Eval(%.60s) = %v, want ExceededMemoryLimit", expr, err)
		}
	}
	// Values built one after another are not held together.
	if err := evalErr(t, doc, `{"$strLenBytes": {"$reduce": {"input": {"$range": [0, 20]}, "initialValue": "", "in": `+twice+`}}}`); err != nil {
		t.Errorf("a $reduce building one value at a time: %v", err)
	}
}

func TestExprSplitSize(t *testing.T) {
	// 8 MiB of separators make 8 Mi empty strings, far more than 16 MiB.
	doc, _ := bson.Marshal(bson.D{{Key: "s", Value: strings.Repeat(",", 8<<20)}})
	var err error
	grew := heapGrowth(func() { err = evalErr(t, doc, `{"$split": ["$s", ","]}`) })
	if mongoerr.CodeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Errorf("$split = %v, want BSONObjectTooLarge", err)
	}
	if grew > 64<<20 {
		t.Errorf("$split allocated %d MiB before refusing", grew>>20)
	}
}

func TestExprRange(t *testing.T) {
	doc := raw(t, `{}`)
	for expr, want := range map[string]string{
		`{"$range": [0, 5]}`:                  `[0, 1, 2, 3, 4]`,
		`{"$range": [0, 5, 2]}`:               `[0, 2, 4]`,
		`{"$range": [5, 0, -2]}`:              `[5, 3, 1]`,
		`{"$range": [0, 5, -1]}`:              `[]`,
		`{"$range": [2.0, 4]}`:                `[2, 3]`,
		`{"$size": {"$range": [0, 1000000]}}`: `1000000`,
	} {
		e, err := CompileExpr(value(t, expr))
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Eval(doc)
		if err != nil {
			t.Errorf("Eval(%s): %v", expr, err)
			continue
		}
		if w := value(t, want); got.Type != w.Type || string(got.Data) != string(w.Data) {
			t.Errorf("Eval(%s) = %s, want %s", expr, got, w)
		}
	}
	for expr, code := range map[string]mongoerr.Code{
		`{"$range": ["a", 5]}`:    34443,
		`{"$range": [0.5, 5]}`:    34444,
		`{"$range": [0, null]}`:   34445,
		`{"$range": [0, 1e10]}`:   34446,
		`{"$range": [0, 5, "a"]}`: 34447,
		`{"$range": [0, 5, 1.5]}`: 34448,
		`{"$range": [0, 5, 0]}`:   34449,
	} {
		if err := evalErr(t, doc, expr); mongoerr.CodeOf(err) != code {
			t.Errorf("Eval(%s) = %v, want code %d", expr, err, code)
		}
	}
}

func TestExprRangeArity(t *testing.T) {
	if _, err := CompileExpr(value(t, `{"$range": [0, 1, 2, 3]}`)); mongoerr.CodeOf(err) != codeRangedArity {
		t.Errorf("$range with four arguments = %v, want code %d", err, codeRangedArity)
	}
}

func TestExprStopsWithContext(t *testing.T) {
	// A long $map and a long $reduce end when their request does.
	for _, expr := range []string{
		`{"$map": {"input": {"$range": [0, 1000000]}, "in": {"$add": ["$$this", 1]}}}`,
		`{"$reduce": {"input": {"$range": [0, 1000000]}, "initialValue": 0, "in": {"$add": ["$$value", 1]}}}`,
	} {
		e, err := CompileExpr(value(t, expr))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.EvalContext(ctx, raw(t, `{}`)); !errors.Is(err, context.Canceled) {
			t.Errorf("EvalContext(%.40s) with an ended context = %v, want context.Canceled", expr, err)
		}
	}
}
