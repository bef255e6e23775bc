package catalog

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/writestmt"
)

func (s *Service) create(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	opts := bson.D{}
	var viewOn string
	var pipeline []bson.Raw
	haveViewOn, havePipeline := false, false
	for key, v := range command.Args(req.Body) {
		switch k := string(key); k {
		case "viewOn":
			if viewOn, err = command.String("create", k, v); err != nil {
				return nil, err
			}
			haveViewOn = true
		case "pipeline":
			if pipeline, err = writestmt.DocArray("create", k, v); err != nil {
				return nil, err
			}
			havePipeline = true
		case engine.PreImagesOption:
			on, err := preImagesArg(req.DB, "create", v)
			if err != nil {
				return nil, err
			}
			if on {
				// Stored and listed only when enabled, as by MongoDB.
				opts = append(opts, bson.E{Key: k, Value: bson.D{{Key: "enabled", Value: true}}})
			}
		case "timeseries", "clusteredIndex", "encryptedFields":
			return nil, mongoerr.New(mongoerr.CommandNotSupported, "create option '%s' is not supported", k)
		case "capped":
			capped, err := command.Bool("create", k, v)
			if err != nil {
				return nil, err
			}
			if capped {
				return nil, mongoerr.New(mongoerr.CommandNotSupported, "capped collections are not supported; use a TTL index to bound a collection")
			}
			opts = append(opts, bson.E{Key: k, Value: v})
		case "expireAfterSeconds":
			// Only clustered and time series collections, which Lethe
			// does not have, take a collection-level expiry.
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' requires clustering to be enabled")
		case "size", "max", "validator", "validationLevel", "validationAction", "storageEngine",
			"indexOptionDefaults", "idIndex", "autoIndexId", "flags":
			opts = append(opts, bson.E{Key: k, Value: v})
		case "collation":
			if err := command.CheckCollation("create", v); err != nil {
				return nil, err
			}
			// Checked and stored normalised by the engine.
			opts = append(opts, bson.E{Key: k, Value: v})
		default:
			return nil, command.UnknownField("create", key)
		}
	}
	if havePipeline && !haveViewOn {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "'pipeline' requires 'viewOn' to also be specified")
	}
	if haveViewOn {
		others := make([]string, 0, len(opts))
		for _, o := range opts {
			others = append(others, o.Key)
		}
		if err := s.createView(ctx, req, coll, viewOn, pipeline, others); err != nil {
			return nil, err
		}
		return command.OK()
	}
	raw, _ := bson.Marshal(opts)
	if err := s.eng.CreateCollection(ctx, req.DB, coll, engine.CreateOptions{Raw: raw}); err != nil {
		if me, ok := mongoerr.As(err); !ok || me.Code != mongoerr.NamespaceExists {
			return nil, err
		}
		if err := s.createExisting(req.DB, coll, raw, err); err != nil {
			return nil, err
		}
	}
	return command.OK()
}

func (s *Service) drop(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	nIndexes := 0
	if idx, err := s.eng.ListIndexes(ctx, req.DB, coll); err == nil {
		nIndexes = len(idx)
	}
	existed, err := s.eng.DropCollection(ctx, req.DB, coll)
	if err != nil {
		return nil, err
	}
	if !existed {
		// MongoDB 7 treats dropping a missing collection as success.
		return command.OK()
	}
	return command.OK(bson.E{Key: "nIndexesWas", Value: int32(nIndexes)}, bson.E{Key: "ns", Value: req.DB + "." + coll})
}

func (s *Service) dropDatabase(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	if err := s.eng.DropDatabase(ctx, req.DB); err != nil {
		return nil, err
	}
	return command.OK(bson.E{Key: "dropped", Value: req.DB})
}

func (s *Service) listDatabases(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	var filter bson.Raw
	nameOnly := false
	var err error
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "filter":
			filter, err = command.Doc("listDatabases", "filter", v)
		case "nameOnly":
			nameOnly, err = command.Bool("listDatabases", "nameOnly", v)
		case "authorizedDatabases":
		default:
			err = command.UnknownField("listDatabases", key)
		}
		if err != nil {
			return nil, err
		}
	}
	match, err := engine.MatchCatalog(filter, s.clock.Now())
	if err != nil {
		return nil, err
	}
	names, err := by.ListableDatabases(ctx)
	if err != nil {
		return nil, err
	}
	var dbs bson.A
	var total int64
	for _, name := range names {
		var d bson.D
		var size int64
		if nameOnly {
			d = bson.D{{Key: "name", Value: name}}
		} else {
			size = s.eng.DatabaseSize(ctx, name)
			d = bson.D{{Key: "name", Value: name}, {Key: "sizeOnDisk", Value: size}, {Key: "empty", Value: size == 0}}
		}
		raw, _ := bson.Marshal(d)
		if match(raw) {
			dbs = append(dbs, d)
			total += size // of the databases listed only, as mongod sums them
		}
	}
	if nameOnly {
		return command.OK(bson.E{Key: "databases", Value: nonNil(dbs)})
	}
	return command.OK(bson.E{Key: "databases", Value: nonNil(dbs)}, bson.E{Key: "totalSize", Value: total}, bson.E{Key: "totalSizeMb", Value: total >> 20})
}

func (s *Service) listCollections(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	var filter bson.Raw
	nameOnly := false
	batchSize := 0
	var err error
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "filter":
			filter, err = command.Doc("listCollections", "filter", v)
		case "nameOnly":
			nameOnly, err = command.Bool("listCollections", "nameOnly", v)
		case "cursor":
			err = cursor.Option("listCollections", v, &batchSize)
		case "authorizedCollections", "includePendingDrops":
		default:
			err = command.UnknownField("listCollections", key)
		}
		if err != nil {
			return nil, err
		}
	}
	match, err := engine.MatchCatalog(filter, s.clock.Now())
	if err != nil {
		return nil, err
	}
	if err := engine.ValidateDBName(req.DB); err != nil {
		return nil, err
	}
	var docs []bson.Raw
	for _, ci := range s.eng.Collections(ctx, req.DB) {
		var d bson.D
		if nameOnly {
			d = bson.D{{Key: "name", Value: ci.Name}, {Key: "type", Value: "collection"}}
		} else {
			opts := ci.Options
			if len(opts) == 0 {
				opts, _ = bson.Marshal(bson.D{})
			}
			d = bson.D{
				{Key: "name", Value: ci.Name},
				{Key: "type", Value: "collection"},
				{Key: "options", Value: opts},
				{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}, {Key: "uuid", Value: ci.UUID}}},
				{Key: "idIndex", Value: engine.IDIndexSpec(ci.Options)},
			}
		}
		raw, _ := bson.Marshal(d)
		if match(raw) {
			docs = append(docs, raw)
		}
	}
	for _, d := range s.viewInfos(req.DB, nameOnly) {
		raw, _ := bson.Marshal(d)
		if match(raw) {
			docs = append(docs, raw)
		}
	}
	ns := req.DB + ".$cmd.listCollections"
	return s.cursors.Reply(ctx, req, by, cursor.NewSlice(docs, engine.Incarnation{}), ns, batchSize, cursor.Options{})
}

func (s *Service) renameCollection(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	from, err := command.String("renameCollection", "renameCollection", command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	var to string
	dropTarget := false
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "to":
			to, err = command.String("renameCollection", "to", v)
		case "dropTarget":
			dropTarget, err = command.Bool("renameCollection", "dropTarget", v)
		case "stayTemp":
		default:
			err = command.UnknownField("renameCollection", key)
		}
		if err != nil {
			return nil, err
		}
	}
	fromDB, fromColl, ok1 := strings.Cut(from, ".")
	toDB, toColl, ok2 := strings.Cut(to, ".")
	if !ok1 || !ok2 {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", to)
	}
	if err := s.eng.RenameCollection(ctx, fromDB, fromColl, toDB, toColl, dropTarget); err != nil {
		return nil, err
	}
	return command.OK()
}

func (s *Service) validate(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var full, repair, background, checkBSON bool
	for key, v := range command.Args(req.Body) {
		switch k := string(key); k {
		case "full":
			full, err = command.Bool("validate", k, v)
		case "checkBSONConformance":
			checkBSON, err = command.Bool("validate", k, v)
		case "repair":
			repair, err = command.Bool("validate", k, v)
		case "background":
			background, err = command.Bool("validate", k, v)
		case "metadata", "scandata":
			_, err = command.Bool("validate", k, v)
		default:
			err = command.UnknownField("validate", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if repair {
		return nil, mongoerr.New(mongoerr.CommandNotSupported, "validate with repair is not supported: Lethe reports inconsistencies but does not repair them")
	}
	if background && full {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Running the validate command with both { background: true } and { full: true } is not supported.")
	}
	// The engine checks BSON conformance (UTF-8) in its full validation,
	// which both options ask for, as MongoDB's validate does with either.
	res, err := s.eng.Validate(ctx, req.DB, coll, full || checkBSON)
	if err != nil {
		return nil, err
	}
	keys := bson.D{}
	details := bson.D{}
	for _, name := range res.Indexes {
		keys = append(keys, bson.E{Key: name, Value: res.KeysPerIndex[name]})
		details = append(details, bson.E{Key: name, Value: bson.D{{Key: "valid", Value: !res.InvalidIndexes[name]}}})
	}
	strs := func(ss []string) bson.A {
		a := bson.A{}
		for _, s := range ss {
			a = append(a, s)
		}
		return a
	}
	entries := func(ps []engine.IndexEntryProblem) bson.A {
		a := bson.A{}
		for _, p := range ps {
			d := bson.D{{Key: "indexName", Value: p.Index}, {Key: "recordId", Value: bson.Binary{Data: p.RecordID}}}
			if p.ID.Type != 0 {
				d = append(d, bson.E{Key: "idKey", Value: bson.D{{Key: "_id", Value: p.ID}}})
			}
			a = append(a, d)
		}
		return a
	}
	corrupt := bson.A{}
	for _, rid := range res.CorruptRecords {
		corrupt = append(corrupt, bson.Binary{Data: rid})
	}
	return command.OK(
		bson.E{Key: "ns", Value: req.DB + "." + coll},
		bson.E{Key: "uuid", Value: res.UUID},
		bson.E{Key: "nInvalidDocuments", Value: res.NInvalidDocuments},
		bson.E{Key: "nNonCompliantDocuments", Value: res.NNonCompliantDocuments},
		bson.E{Key: "nrecords", Value: res.NRecords},
		bson.E{Key: "nIndexes", Value: int32(res.NIndexes)},
		bson.E{Key: "keysPerIndex", Value: keys},
		bson.E{Key: "indexDetails", Value: details},
		bson.E{Key: "valid", Value: res.Valid},
		bson.E{Key: "repaired", Value: false},
		bson.E{Key: "warnings", Value: strs(res.Warnings)},
		bson.E{Key: "errors", Value: strs(res.Errors)},
		bson.E{Key: "extraIndexEntries", Value: entries(res.ExtraEntryDetails)},
		bson.E{Key: "missingIndexEntries", Value: entries(res.MissingEntryDetails)},
		bson.E{Key: "corruptRecords", Value: corrupt},
	)
}

// preImagesArg parses changeStreamPreAndPostImages, {enabled: <bool>}, of
// command cmd on db.
func preImagesArg(db, cmd string, v bson.RawValue) (bool, error) {
	field := cmd + "." + engine.PreImagesOption
	d, ok := v.DocumentOK()
	if !ok {
		return false, command.WrongType(cmd, engine.PreImagesOption, v.Type, "object")
	}
	var enabled bson.RawValue
	for key, ev := range command.Fields(d) {
		if string(key) != "enabled" {
			return false, command.UnknownField(field, key)
		}
		enabled = ev
	}
	if enabled.Type == 0 {
		return false, command.MissingField(field, "enabled")
	}
	on, ok := enabled.BooleanOK()
	if !ok {
		return false, command.WrongType(field, "enabled", enabled.Type, "bool")
	}
	if on && (db == "admin" || db == "local" || db == "config") {
		return false, mongoerr.New(mongoerr.InvalidOptions, "changeStreamPreAndPostImages collection option is not supported on the %s database", db)
	}
	return on, nil
}
