package catalog

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// createView is create with viewOn: pipeline (nil for none) over viewOn.
func (s *Service) createView(ctx context.Context, req *command.Request, coll, viewOn string, pipeline []bson.Raw, others []string) error {
	var collation bson.Raw
	if i := slices.Index(others, "collation"); i >= 0 {
		// The view's default collation, checked by the engine.
		collation = req.Body.Lookup("collation").Document()
		others = slices.Delete(others, i, i+1)
	}
	switch {
	case slices.Contains(others, "idIndex"):
		return mongoerr.New(mongoerr.InvalidOptions, "'idIndex' is not allowed with 'viewOn'")
	case len(others) > 0:
		return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: %s", others[0])
	}
	if pipeline == nil {
		pipeline = []bson.Raw{}
	}
	return s.eng.CreateViewCollated(ctx, req.DB, coll, viewOn, pipeline, collation)
}

// viewInfos are listCollections' entries for db's views.
func (s *Service) viewInfos(db string, nameOnly bool) []bson.D {
	var out []bson.D
	for _, v := range s.eng.Views(context.TODO(), db) {
		d := bson.D{{Key: "name", Value: v.Name}, {Key: "type", Value: "view"}}
		if !nameOnly {
			stages := make(bson.A, len(v.Pipeline))
			for i, st := range v.Pipeline {
				stages[i] = st
			}
			opts := bson.D{{Key: "viewOn", Value: v.ViewOn}, {Key: "pipeline", Value: stages}}
			if v.Collation != nil {
				opts = append(opts, bson.E{Key: "collation", Value: v.Collation})
			}
			d = append(d,
				bson.E{Key: "options", Value: opts},
				bson.E{Key: "info", Value: bson.D{{Key: "readOnly", Value: true}}})
		}
		out = append(out, d)
	}
	return out
}
