package viewdef

import (
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Collection is the collection of each database that holds the
// definitions of its views.
const Collection = "system.views"

// MaxDepth is how many views a read may go through, as in MongoDB.
const MaxDepth = 20

// View is the definition of a view.
type View struct {
	Name     string
	ViewOn   string
	Pipeline []bson.Raw
	// Collation is the view's default collation, normalised; nil is the
	// simple one. Reads of the view compare strings under it.
	Collation bson.Raw
}

// Document is v's document in db's system.views.
func Document(db string, v *View) (bson.Raw, error) {
	stages := make(bson.A, len(v.Pipeline))
	for i, s := range v.Pipeline {
		stages[i] = s
	}
	d := bson.D{{Key: "_id", Value: ns(db, v.Name)}, {Key: "viewOn", Value: v.ViewOn}, {Key: "pipeline", Value: stages}}
	if v.Collation != nil {
		d = append(d, bson.E{Key: "collation", Value: v.Collation})
	}
	doc, err := bson.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("engine: encode view %s.%s: %w", db, v.Name, err)
	}
	return doc, nil
}

// Parse reads a view of db from its document in system.views.
func Parse(db string, doc bson.Raw) (*View, error) {
	id, ok := doc.Lookup("_id").StringValueOK()
	name, found := strings.CutPrefix(id, db+".")
	if !ok || !found || name == "" {
		return nil, fmt.Errorf("view _id %s is not a name in %s", doc.Lookup("_id"), db)
	}
	viewOn, ok := doc.Lookup("viewOn").StringValueOK()
	if !ok || viewOn == "" {
		return nil, fmt.Errorf("view %s: viewOn is not a name", id)
	}
	arr, ok := doc.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, fmt.Errorf("view %s: pipeline is not an array", id)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, fmt.Errorf("view %s: %w", id, err)
	}
	v := &View{Name: name, ViewOn: viewOn, Pipeline: []bson.Raw{}}
	if c, ok := doc.Lookup("collation").DocumentOK(); ok {
		v.Collation = bson.Raw(slices.Clone(c))
	}
	for _, s := range vals {
		d, ok := s.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("view %s: a stage is a %s", id, s.Type)
		}
		v.Pipeline = append(v.Pipeline, bson.Raw(slices.Clone(d)))
	}
	return v, nil
}

// ClonePipeline copies a pipeline's stages, so that a definition holds no
// caller's buffers.
func ClonePipeline(p []bson.Raw) []bson.Raw {
	out := make([]bson.Raw, len(p))
	for i, s := range p {
		out[i] = bson.Raw(slices.Clone(s))
	}
	return out
}

// SamePipeline reports whether two pipelines have the same stages, byte
// for byte.
func SamePipeline(a, b []bson.Raw) bool {
	return slices.EqualFunc(a, b, func(x, y bson.Raw) bool { return string(x) == string(y) })
}

// ns is a namespace's "db.name", as the engine keys its views.
func ns(db, name string) string { return db + "." + name }
