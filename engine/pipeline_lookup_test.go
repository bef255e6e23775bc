package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
)

// recordingCatalog remembers the filters the stages read with, and
// counts the sub-pipelines they run.
type recordingCatalog struct {
	pipeline.Catalog
	filters    []bson.Raw
	aggregates int
}

func (r *recordingCatalog) Aggregate(ctx context.Context, db, coll string, stages []bson.Raw, vars pipeline.Vars) ([]bson.Raw, error) {
	r.aggregates++
	return r.Catalog.Aggregate(ctx, db, coll, stages, vars)
}

func (r *recordingCatalog) Find(ctx context.Context, db, coll string, filter bson.Raw) (pipeline.Source, error) {
	r.filters = append(r.filters, filter)
	return r.Catalog.Find(ctx, db, coll, filter)
}

// TestLookupUsesForeignIndex checks that every read of an equality
// $lookup is one the planner answers from the index on foreignField, and
// that input documents with the same local value read once. A missing
// local value joins as null, which the planner does not yet read from an
// index.
func TestLookupUsesForeignIndex(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	var foreign []bson.D
	for i := range 50 {
		foreign = append(foreign, bson.D{{Key: "_id", Value: i}, {Key: "f", Value: i % 10}})
	}
	foreign = append(foreign, bson.D{{Key: "_id", Value: "nullish"}})
	insertD(t, e, "db", "foreign", foreign...)
	if _, err := e.CreateIndexes(ctx, "db", "foreign", []bson.Raw{mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "f", Value: 1}}}, {Key: "name", Value: "f_1"}})}); err != nil {
		t.Fatal(err)
	}
	local := []bson.Raw{
		mustMarshal(t, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 3}}),
		mustMarshal(t, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 3}}),
		mustMarshal(t, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: bson.A{1, 2}}}),
		mustMarshal(t, bson.D{{Key: "_id", Value: 4}}),
	}
	opts := e.pipelineOptions("db", AggregateOptions{})
	rec := &recordingCatalog{Catalog: opts.Catalog}
	opts.Catalog = rec
	p, err := pipeline.Compile([]bson.Raw{mustMarshal(t, bson.D{{Key: "$lookup", Value: bson.D{
		{Key: "from", Value: "foreign"}, {Key: "localField", Value: "k"}, {Key: "foreignField", Value: "f"}, {Key: "as", Value: "j"}}}})}, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(ctx, pipeline.Slice(local))
	if err != nil {
		t.Fatal(err)
	}
	wantJoined := []int{5, 5, 10, 1}
	for i, d := range out {
		vals, _ := d.Lookup("j").Array().Values()
		if len(vals) != wantJoined[i] {
			t.Errorf("document %d joined %d documents, want %d", i, len(vals), wantJoined[i])
		}
	}
	if len(rec.filters) != 3 {
		t.Fatalf("%d reads for 3 distinct local values: %v", len(rec.filters), rec.filters)
	}
	// The last read looks for null, which Lethe's planner answers with a
	// collection scan, as it does any {f: null} query.
	for _, f := range rec.filters[:2] {
		ex, err := e.Explain(ctx, "db", "foreign", FindSpec{Filter: f}, true)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Stage != "IXSCAN" || ex.IndexName != "f_1" || ex.DocsExam > ex.NReturned {
			t.Errorf("read %v: %s on %q examining %d documents for %d, want IXSCAN on f_1", f, ex.Stage, ex.IndexName, ex.DocsExam, ex.NReturned)
		}
	}
}

// TestLookupReusesSubPipelines checks that a sub-pipeline runs once per
// distinct set of variable values; package pipeline's tests check that one
// that draws random numbers is never reused.
func TestLookupReusesSubPipelines(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	insertD(t, e, "db", "foreign", bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	local := func() []bson.Raw {
		return []bson.Raw{
			mustMarshal(t, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}}),
			mustMarshal(t, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 1.0}}),
			mustMarshal(t, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: 1}}),
		}
	}
	for _, c := range []struct {
		name   string
		lookup bson.D
		runs   int
	}{
		{"uncorrelated", bson.D{{Key: "pipeline", Value: bson.A{}}}, 1},
		{"by variable value and type", bson.D{{Key: "let", Value: bson.D{{Key: "k", Value: "$k"}}}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$_id", "$$k"}}}}}}}}}}, 2},
	} {
		opts := e.pipelineOptions("db", AggregateOptions{})
		rec := &recordingCatalog{Catalog: opts.Catalog}
		opts.Catalog = rec
		spec := append(bson.D{{Key: "from", Value: "foreign"}, {Key: "as", Value: "j"}}, c.lookup...)
		p, err := pipeline.Compile([]bson.Raw{mustMarshal(t, bson.D{{Key: "$lookup", Value: spec}})}, opts)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(ctx, pipeline.Slice(local()))
		if err != nil {
			t.Fatal(err)
		}
		if rec.aggregates != c.runs {
			t.Errorf("%s: %d runs of the sub-pipeline, want %d", c.name, rec.aggregates, c.runs)
		}
		for _, d := range out {
			if vals, _ := d.Lookup("j").Array().Values(); len(vals) == 0 {
				t.Errorf("%s: %v joined nothing", c.name, d)
			}
		}
	}
}
