package catalog

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/writestmt"
)

func (s *Service) createIndexes(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var specs []bson.Raw
	ignoreUnknown := false
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "indexes":
			specs, err = writestmt.DocArray("createIndexes", "indexes", v)
		case "ignoreUnknownIndexOptions":
			ignoreUnknown, err = command.Bool("createIndexes", "ignoreUnknownIndexOptions", v)
		case "commitQuorum":
		default:
			err = command.UnknownField("createIndexes", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(specs) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one index to create")
	}
	if ignoreUnknown {
		for i, spec := range specs {
			if specs[i], err = knownIndexOptions(spec); err != nil {
				return nil, err
			}
		}
	}
	for _, spec := range specs {
		if err := checkIndexSpec(spec); err != nil {
			return nil, err
		}
	}
	res, err := s.eng.CreateIndexes(ctx, req.DB, coll, specs)
	if err != nil {
		return nil, err
	}
	elems := []bson.E{
		{Key: "numIndexesBefore", Value: int32(res.Before)},
		{Key: "numIndexesAfter", Value: int32(res.After)},
	}
	if res.Note != "" {
		elems = append(elems, bson.E{Key: "note", Value: res.Note})
	}
	elems = append(elems, bson.E{Key: "createdCollectionAutomatically", Value: res.CreatedCollection})
	return command.OK(elems...)
}

// knownIndexOptions returns spec without the fields MongoDB does not know,
// which createIndexes drops instead of refusing under
// ignoreUnknownIndexOptions.
func knownIndexOptions(spec bson.Raw) (bson.Raw, error) {
	var kept bson.D
	for key, v := range command.Fields(spec) {
		if engine.IsIndexOption(string(key)) {
			kept = append(kept, bson.E{Key: string(key), Value: v})
		}
	}
	raw, err := bson.Marshal(kept)
	if err != nil {
		return nil, fmt.Errorf("server: index spec: %w", err)
	}
	return raw, nil
}

func (s *Service) listIndexes(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	batchSize := 0
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "cursor":
			err = cursor.Option("listIndexes", v, &batchSize)
		case "includeBuildUUIDs", "includeIndexBuildInfo":
		default:
			err = command.UnknownField("listIndexes", key)
		}
		if err != nil {
			return nil, err
		}
	}
	specs, err := s.eng.ListIndexes(ctx, req.DB, coll)
	if err != nil {
		return nil, err
	}
	docs := make([]bson.Raw, 0, len(specs))
	for _, d := range specs {
		raw, err := bson.Marshal(d)
		if err != nil {
			return nil, err
		}
		docs = append(docs, raw)
	}
	return s.cursors.Reply(ctx, req, by, cursor.NewSlice(docs, engine.Incarnation{}), req.DB+"."+coll, batchSize, cursor.Options{})
}

func (s *Service) dropIndexes(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var which bson.RawValue
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "index":
			which = v
		default:
			err = command.UnknownField("dropIndexes", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if which.Type == 0 {
		return nil, command.MissingField("dropIndexes", "index")
	}
	was, err := s.eng.DropIndexes(ctx, req.DB, coll, which)
	if err != nil {
		return nil, err
	}
	return command.OK(bson.E{Key: "nIndexesWas", Value: int32(was)})
}

func (s *Service) collMod(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var change *engine.IndexChange
	var validation engine.CollectionValidation
	changeValidation := false
	var preImages *bool
	for key, v := range command.Args(req.Body) {
		switch k := string(key); k {
		case "index":
			var d bson.Raw
			if d, err = command.Doc("collMod", "index", v); err != nil {
				return nil, err
			}
			ch := engine.IndexChange{}
			for ik, iv := range command.Fields(d) {
				switch string(ik) {
				case "keyPattern":
					ch.KeyPattern, err = command.Doc("collMod.index", "keyPattern", iv)
				case "name":
					ch.Name, err = command.String("collMod.index", "name", iv)
				case "expireAfterSeconds":
					val := bsoncore.Value{Type: bsoncore.Type(iv.Type), Data: iv.Value}
					ch.ExpireAfter = &val
				case "hidden":
					var h bool
					if h, err = command.Bool("collMod.index", "hidden", iv); err == nil {
						ch.Hidden = &h
					}
				case "prepareUnique", "unique":
					err = mongoerr.New(mongoerr.InvalidOptions, "collMod index option '%s' is not supported", ik)
				default:
					err = command.UnknownField("collMod.index", ik)
				}
				if err != nil {
					return nil, err
				}
			}
			if (ch.KeyPattern == nil) == (ch.Name == "") {
				return nil, mongoerr.New(mongoerr.InvalidOptions, "must specify exactly one of keyPattern or name in the index option")
			}
			change = &ch
		case "validator":
			if validation.Validator, err = command.Doc("collMod", "validator", v); err != nil {
				return nil, err
			}
			changeValidation = true
		case "validationLevel", "validationAction":
			str, err := command.String("collMod", k, v)
			if err != nil {
				return nil, err
			}
			if k == "validationLevel" {
				validation.Level = &str
			} else {
				validation.Action = &str
			}
			changeValidation = true
		case "expireAfterSeconds":
			// As on create: only clustered and time series collections
			// expire as a whole.
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' option is only supported on collections clustered by _id")
		case engine.PreImagesOption:
			on, err := preImagesArg(req.DB, "collMod", v)
			if err != nil {
				return nil, err
			}
			preImages = &on
		case "dryRun":
			// Accepted.
		default:
			return nil, command.UnknownField("collMod", key)
		}
	}
	if !s.eng.CollectionExists(ctx, req.DB, coll) {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", req.DB, coll)
	}
	if changeValidation {
		if err := s.eng.SetValidation(ctx, req.DB, coll, validation); err != nil {
			return nil, err
		}
	}
	if preImages != nil {
		if err := s.eng.SetPreAndPostImages(ctx, req.DB, coll, *preImages); err != nil {
			return nil, err
		}
	}
	if change == nil {
		return command.OK()
	}
	res, err := s.eng.CollModIndex(ctx, req.DB, coll, *change)
	if err != nil {
		return nil, err
	}
	var elems []bson.E
	if res.OldExpireAfter != nil {
		elems = append(elems, bson.E{Key: "expireAfterSeconds_old", Value: int64(*res.OldExpireAfter)})
	}
	if res.NewExpireAfter != nil {
		elems = append(elems, bson.E{Key: "expireAfterSeconds_new", Value: int64(*res.NewExpireAfter)})
	}
	if res.NewHidden != nil {
		elems = append(elems, bson.E{Key: "hidden_old", Value: *res.OldHidden}, bson.E{Key: "hidden_new", Value: *res.NewHidden})
	}
	return command.OK(elems...)
}
