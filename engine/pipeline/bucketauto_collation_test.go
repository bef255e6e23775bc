package pipeline

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/spill"
)

// TestBucketAutoSpillCollates checks that a $bucketAuto that spills cuts
// the same buckets under a collation as the one in memory: its sorter
// orders the collation keys of the values, so that values equal under
// the collation (here, words in either case under strength 2) are never
// split. MongoDB's sorter of $bucketAuto compares with the
// ExpressionContext's ValueComparator, which holds the collator
// (src/mongo/db/pipeline/document_source_bucket_auto.cpp).
func TestBucketAutoSpillCollates(t *testing.T) {
	words := []string{"apple", "Apple", "APPLE", "berry", "Berry", "cherry", "CHERRY", "date", "Date", "elder"}
	pad := strings.Repeat("p", 900)
	var docs []bson.Raw
	for i := range 400 {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "s", Value: words[i*7%len(words)]}, {Key: "pad", Value: pad}})
		docs = append(docs, d)
	}
	coll, err := collation.Parse(mustRaw(t, `{"locale": "en", "strength": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	stages := stagesOf(t, `{"$bucketAuto": {"groupBy": "$s", "buckets": 3, "output": {"n": {"$sum": 1}, "ids": {"$sum": "$_id"}}}}`)

	mem, err := Compile(stages, Options{SortLimit: 100 << 20, MemLimit: 100 << 20, Collator: coll})
	if err != nil {
		t.Fatal(err)
	}
	want, err := mem.Run(context.Background(), Slice(docs))
	if err != nil {
		t.Fatal(err)
	}

	sc := spill.New(spill.Config{Dir: filepath.Join(t.TempDir(), "_tmp", "1")})
	defer sc.Close()
	spilled, err := Compile(stages, Options{AllowDiskUse: true, Scratch: sc, SortLimit: 64 << 10, MemLimit: 4 << 20, Collator: coll})
	if err != nil {
		t.Fatal(err)
	}
	got, err := spilled.Run(context.Background(), Slice(docs))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, func(a, b bson.Raw) bool { return a.String() == b.String() }) {
		t.Errorf("spilled buckets\n%v\nwant those made in memory\n%v", got, want)
	}
	// Each word's documents are in one bucket whatever their case: the
	// 120 of apple and the 80 of berry, then cherry and date, then elder.
	// In byte order, where every spelling is a value of its own, the
	// buckets would be of 160, 160 and 80.
	var counts []int32
	for _, d := range got {
		counts = append(counts, d.Lookup("n").Int32())
	}
	if !slices.Equal(counts, []int32{200, 160, 40}) {
		t.Errorf("buckets of %v documents, want [200 160 40]", counts)
	}
}

func mustRaw(t *testing.T, s string) bson.Raw {
	t.Helper()
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatal(err)
	}
	return d
}
