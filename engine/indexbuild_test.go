package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestIndexBuildSurvivesItsBuilder: a server that dies after storing an
// index as building, before any entry is written, leaves the build to the
// others: once its lease on the roster has run out, another server claims
// the build, writes the entries and makes the index ready, and the index
// then finds what a collection scan does (issue 22: builds survive the
// builder's death).
func TestIndexBuildSurvivesItsBuilder(t *testing.T) {
	ctx := context.Background()
	const lease = 600 * time.Millisecond
	es := sharedEngines(t, 2, Options{NoReaper: true, Cluster: ClusterOptions{Lease: lease}})
	a, b := es[0], es[1]
	var docs []bson.Raw
	for i := 0; i < 600; i++ {
		docs = append(docs, modelRaw(bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 7}}))
	}
	if _, err := a.Insert(ctx, "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	// a stores the index as building, the first step of a build, and dies.
	im, err := parseIndexSpec(modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}}))
	if err != nil {
		t.Fatal(err)
	}
	if im.ID, err = a.allocIDs(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c := a.collection("db", "c")
	c.ddl.Lock()
	_, err = a.changeStored(ctx, c, func(meta *collMeta) error {
		im.Building, im.Builder = true, a.cluster.member.ID()
		meta.Indexes = append(meta.Indexes, im)
		return nil
	}, nil)
	c.ddl.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	a.Halt()

	deadline := time.Now().Add(20 * lease)
	for {
		specs, err := b.ListIndexes(ctx, "db", "c")
		if err != nil {
			t.Fatal(err)
		}
		if len(specs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build of a dead server was not finished by the other: indexes %v", specs)
		}
		time.Sleep(lease / 10)
	}
	for k := 0; k < 7; k++ {
		find := func(hint bson.D) string {
			raw, _ := bson.Marshal(hint)
			cur, err := b.Find(ctx, "db", "c", FindSpec{Filter: modelRaw(bson.D{{Key: "k", Value: k}}), Hint: bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: raw}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cur.All(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(len(got))
		}
		if byIndex, byScan := find(bson.D{{Key: "k", Value: 1}}), find(bson.D{{Key: "$natural", Value: 1}}); byIndex != byScan || byScan == "0" {
			t.Fatalf("k=%d: the index finds %s documents, a scan %s", k, byIndex, byScan)
		}
	}
}
