package server

import (
	"context"
	"math"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/engine/update"
)

func (s *Server) crudCommands() []command {
	cmds := []command{
		{name: "insert", handle: s.insert},
		{name: "update", handle: s.update},
		{name: "delete", handle: s.delete},
		{name: "find", handle: s.find},
		{name: "findAndModify", aliases: []string{"findandmodify"}, handle: s.findAndModify},
		{name: "count", handle: s.count},
		{name: "distinct", handle: s.distinct},
		{name: "aggregate", handle: s.aggregate},
	}
	cmds = append(cmds, s.collectionCommands()...)
	cmds = append(cmds, s.deploymentCommands()...)
	return append(cmds, s.explainCommands()...)
}

// collectionName reads the command's first value as a collection name.
func collectionName(req *Request) (string, error) {
	v := firstValue(req.Body)
	name, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.InvalidNamespace, "collection name has invalid type %s", typeName(v.Type))
	}
	if err := engine.ValidateNamespace(req.DB, name); err != nil {
		return "", err
	}
	return name, nil
}

// statements returns a write command's statements from the body array or
// from an OP_MSG document sequence of the same name.
func statements(req *Request, cmd, field string, v bson.RawValue) ([]bson.Raw, error) {
	arr, err := argArray(cmd, field, v)
	if err != nil {
		return nil, err
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid %s array: %v", field, err)
	}
	docs := make([]bson.Raw, 0, len(vals))
	for i, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, wrongType(cmd, field+"."+strconv.Itoa(i), el.Type, "object")
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// writeErrorsElement appends writeErrors: [{index, code, codeName, errmsg, ...}].
func writeErrorsElement(errs []engine.WriteError) bson.E {
	arr := make(bson.A, 0, len(errs))
	for _, we := range errs {
		me, _ := asMongoError(we.Err)
		d := bson.D{{Key: "index", Value: int32(we.Index)}, {Key: "code", Value: int32(me.Code)}, {Key: "codeName", Value: me.Code.String()}, {Key: "errmsg", Value: me.Msg}}
		d = append(d, me.Extra...)
		arr = append(arr, d)
	}
	return bson.E{Key: "writeErrors", Value: arr}
}

func (s *Server) insert(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	ordered := true
	docs := req.Sequences["documents"]
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case "documents":
			docs, err = statements(req, "insert", "documents", v)
		case "ordered":
			ordered, err = argBool("insert", "ordered", v)
		case "bypassDocumentValidation":
		default:
			err = unknownField("insert", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(docs) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got 0 operations.", maxWriteBatchSize)
	}
	if len(docs) > maxWriteBatchSize {
		return nil, mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", maxWriteBatchSize, len(docs))
	}
	bypass, err := bypassValidation("insert", req.Body)
	if err != nil {
		return nil, err
	}
	res, err := s.eng.Insert(req.DB, coll, docs, ordered, engine.WriteOptions{BypassDocumentValidation: bypass})
	if err != nil {
		return nil, err
	}
	if len(res.Errors) == 0 {
		idx, dst := req.beginReply()
		dst = bsoncore.AppendInt32Element(dst, "n", int32(res.N))
		return req.endReply(idx, dst)
	}
	return okReply(bson.E{Key: "n", Value: int32(res.N)}, writeErrorsElement(res.Errors))
}

// updateStatement is one entry of update's updates array.
type updateStatement struct {
	spec  engine.UpdateSpec
	u     bson.RawValue
	multi bool
	af    []bson.Raw
	c     bson.Raw // constants of this statement, like the command's let
}

func parseUpdateStatement(doc bson.Raw) (updateStatement, error) {
	var st updateStatement
	var err error
	haveQ, haveU := false, false
	for key, v := range fields(doc) {
		switch string(key) {
		case "q":
			st.spec.Filter, err = argDoc("update.updates", "q", v)
			haveQ = true
		case "u":
			st.u, haveU = v, true
		case "upsert":
			st.spec.Upsert, err = argBool("update.updates", "upsert", v)
		case "multi":
			st.spec.Multi, err = argBool("update.updates", "multi", v)
		case "arrayFilters":
			var arr bson.RawArray
			if arr, err = argArray("update.updates", "arrayFilters", v); err == nil {
				vals, _ := arr.Values()
				for _, f := range vals {
					d, ok := f.DocumentOK()
					if !ok {
						return st, wrongType("update.updates", "arrayFilters", f.Type, "object")
					}
					st.af = append(st.af, d)
				}
			}
		case "hint":
			st.spec.Hint, err = argHint(v)
		case "sort":
			st.spec.Sort, err = argDoc("update.updates", "sort", v)
		case "collation":
			err = checkCollation(v)
		case "c":
			st.c, err = argDoc("update.updates", "c", v)
		case "upsertSupplied":
		default:
			err = unknownField("update.updates", key)
		}
		if err != nil {
			return st, err
		}
	}
	if !haveQ {
		return st, missingField("update.updates", "q")
	}
	if !haveU {
		return st, missingField("update.updates", "u")
	}
	return st, nil
}

// compileUpdate compiles u (a document or a pipeline) for a command that
// started at now. The variables of lv are bound in a pipeline's expressions.
func compileUpdate(u bson.RawValue, arrayFilters []bson.Raw, multi bool, lv *engine.Let, now time.Time) (*update.Update, error) {
	switch u.Type {
	case bson.TypeEmbeddedDocument:
		up, err := update.Compile(u.Document(), update.Options{Now: now, ArrayFilters: arrayFilters})
		if err != nil {
			return nil, err
		}
		if multi && up.IsReplacement() {
			return nil, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
		}
		return up, nil
	case bson.TypeArray:
		vals, err := u.Array().Values()
		if err != nil {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid update pipeline: %v", err)
		}
		stages := make([]bson.Raw, 0, len(vals))
		for _, v := range vals {
			d, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
			}
			stages = append(stages, d)
		}
		if stages, err = lv.Pipeline(stages); err != nil {
			return nil, err
		}
		return update.CompilePipeline(stages, update.Options{Now: now, ArrayFilters: arrayFilters})
	}
	return nil, wrongType("update.updates", "u", u.Type, "object", "array")
}

// writeStatements parses what update and delete share: the statements,
// from the body or an OP_MSG document sequence, ordered and let.
func (s *Server) writeStatements(req *Request, cmd, field string) (stmts []bson.Raw, ordered bool, lv *engine.Let, err error) {
	ordered = true
	stmts = req.Sequences[field]
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case field:
			stmts, err = statements(req, cmd, field, v)
		case "ordered":
			ordered, err = argBool(cmd, "ordered", v)
		case "let":
			lv, err = s.parseLet(cmd, v)
		case "bypassDocumentValidation":
		default:
			err = unknownField(cmd, key)
		}
		if err != nil {
			return nil, false, nil, err
		}
	}
	if len(stmts) == 0 || len(stmts) > maxWriteBatchSize {
		return nil, false, nil, mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", maxWriteBatchSize, len(stmts))
	}
	return stmts, ordered, lv, nil
}

// runStatements runs each statement in turn. A MongoDB error becomes a
// write error of that statement, and stops an ordered command; any other
// error fails the whole command.
func runStatements(stmts []bson.Raw, ordered bool, run func(i int, stmt bson.Raw) error) ([]engine.WriteError, error) {
	var errs []engine.WriteError
	for i, stmt := range stmts {
		err := run(i, stmt)
		if err == nil {
			continue
		}
		if _, ok := mongoerr.As(err); !ok {
			return nil, err
		}
		errs = append(errs, engine.WriteError{Index: i, Err: err})
		if ordered {
			break
		}
	}
	return errs, nil
}

func (s *Server) update(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	stmts, ordered, lv, err := s.writeStatements(req, "update", "updates")
	if err != nil {
		return nil, err
	}
	bypass, err := bypassValidation("update", req.Body)
	if err != nil {
		return nil, err
	}
	var n, modified int64
	var upserted bson.A
	now := s.clock.Now() // $$NOW and $currentDate: one time for the command
	errs, err := runStatements(stmts, ordered, func(i int, raw bson.Raw) error {
		st, err := parseUpdateStatement(raw)
		if err != nil {
			return err
		}
		if st.spec.Filter, err = lv.Filter(st.spec.Filter); err != nil {
			return err
		}
		// A statement's constants c reach its pipeline only, over let.
		pipelineLet := lv
		if st.c != nil {
			if st.u.Type != bson.TypeArray {
				return mongoerr.New(51198, "Constant values may only be specified for pipeline updates")
			}
			c, err := engine.ParseLet(st.c, now)
			if err != nil {
				return err
			}
			pipelineLet = lv.With(c)
		}
		if st.spec.Update, err = compileUpdate(st.u, st.af, st.spec.Multi, pipelineLet, now); err != nil {
			return err
		}
		st.spec.BypassDocumentValidation = bypass
		res, err := s.eng.Update(ctx, req.DB, coll, st.spec)
		if err != nil {
			return err
		}
		n += res.Matched
		modified += res.Modified
		if res.Upserted.Type != 0 {
			n++
			upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: res.Upserted}})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	elems := []bson.E{{Key: "n", Value: int32(n)}, {Key: "nModified", Value: int32(modified)}}
	if len(upserted) > 0 {
		elems = append(elems, bson.E{Key: "upserted", Value: upserted})
	}
	if len(errs) > 0 {
		elems = append(elems, writeErrorsElement(errs))
	}
	return okReply(elems...)
}

// deleteOne runs one statement of a delete command.
func (s *Server) deleteOne(ctx context.Context, db, coll string, raw bson.Raw, lv *engine.Let) (int64, error) {
	var filter bson.Raw
	var hint bson.RawValue
	limit := int64(-1)
	var err error
	for key, v := range fields(raw) {
		switch string(key) {
		case "q":
			filter, err = argDoc("delete.deletes", "q", v)
		case "limit":
			limit, err = argInt64("delete.deletes", "limit", v)
		case "hint":
			hint, err = argHint(v)
		case "collation":
			err = checkCollation(v)
		default:
			err = unknownField("delete.deletes", key)
		}
		if err != nil {
			return 0, err
		}
	}
	if filter == nil {
		return 0, missingField("delete.deletes", "q")
	}
	if limit == -1 {
		return 0, missingField("delete.deletes", "limit")
	}
	if limit != 0 && limit != 1 {
		return 0, mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %d", limit)
	}
	if filter, err = lv.Filter(filter); err != nil {
		return 0, err
	}
	return s.eng.Delete(ctx, db, coll, filter, int(limit), hint)
}

func (s *Server) delete(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	stmts, ordered, lv, err := s.writeStatements(req, "delete", "deletes")
	if err != nil {
		return nil, err
	}
	var n int64
	errs, err := runStatements(stmts, ordered, func(i int, raw bson.Raw) error {
		deleted, err := s.deleteOne(ctx, req.DB, coll, raw, lv)
		n += deleted
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return okReply(bson.E{Key: "n", Value: int32(n)}, writeErrorsElement(errs))
	}
	idx, dst := req.beginReply()
	dst = bsoncore.AppendInt32Element(dst, "n", int32(n))
	return req.endReply(idx, dst)
}

// checkCollation accepts the simple collation only: other locales are
// refused rather than silently compared byte-wise.
func checkCollation(v bson.RawValue) error {
	d, ok := v.DocumentOK()
	if !ok {
		return wrongType("collation", "collation", v.Type, "object")
	}
	if len(d) <= 5 {
		return nil
	}
	if loc, _ := d.Lookup("locale").StringValueOK(); loc == "simple" {
		return nil
	}
	return mongoerr.New(mongoerr.BadValue, "collation %s is not supported: Lethe compares strings by their bytes (locale \"simple\")", d.String())
}

func (s *Server) find(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var spec engine.FindSpec
	batchSize := 101
	var tailable, awaitData bool
	var copts cursorOptions
	var lv *engine.Let
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case "filter":
			spec.Filter, err = argObject("filter", v)
		case "sort":
			spec.Sort, err = argObject("sort", v)
		case "projection":
			spec.Projection, err = argObject("projection", v)
		case "hint":
			spec.Hint, err = argHint(v)
		case "skip":
			spec.Skip, err = argNonNegative("find", "skip", v)
		case "limit":
			spec.Limit, err = argNonNegative("find", "limit", v)
		case "batchSize":
			var n int64
			n, err = argNonNegative("find", "batchSize", v)
			batchSize = int(min(n, math.MaxInt32))
		case "singleBatch":
			copts.single, err = argStrictBool("singleBatch", v)
		case "collation":
			if _, err = argObject("collation", v); err == nil {
				err = checkCollation(v)
			}
		case "allowDiskUse":
			spec.AllowDiskUse, err = argStrictBool("allowDiskUse", v)
		case "tailable":
			tailable, err = argStrictBool("tailable", v)
		case "awaitData":
			awaitData, err = argStrictBool("awaitData", v)
		case "oplogReplay":
			// Deprecated and ignored by MongoDB too, but type-checked.
			if v.Type != bson.TypeBoolean {
				err = mongoerr.New(mongoerr.TypeMismatch, "Expected field oplogReplayto be of type object")
			}
		case "noCursorTimeout":
			copts.noTimeout, err = argStrictBool("noCursorTimeout", v)
		case "allowPartialResults", "readOnce":
			// There are no shards whose results could be partial, and
			// readOnce is only a hint.
			_, err = argStrictBool(string(key), v)
		case "returnKey":
			spec.ReturnKey, err = argStrictBool("returnKey", v)
		case "showRecordId":
			err = refuseShowRecordID(v)
		case "min":
			spec.Min, err = argObject("min", v)
		case "max":
			spec.Max, err = argObject("max", v)
		case "let":
			lv, err = s.parseLet("find", v)
		default:
			err = unknownField("find", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := s.checkTailable(req.DB, coll, spec, tailable, awaitData, copts.single); err != nil {
		return nil, err
	}
	if err := checkMinMax(spec.Min, spec.Max); err != nil {
		return nil, err
	}
	if spec.Filter, err = lv.Filter(spec.Filter); err != nil {
		return nil, err
	}
	if spec.Projection, err = lv.Projection(spec.Projection); err != nil {
		return nil, err
	}
	if id, ok := pointID(spec); ok && batchSize != 0 {
		doc, err := s.eng.FindByID(req.DB, coll, id)
		if err != nil {
			return nil, err
		}
		var docs []bson.Raw
		if doc != nil {
			docs = []bson.Raw{doc}
		}
		return appendCursorReply(req, "firstBatch", docs, 0, req.DB+"."+coll)
	}
	if batchSize == 0 {
		batchSize = -1 // an empty first batch
	}
	// The cursor outlives this request's buffer.
	spec.Filter, spec.Sort, spec.Projection = cloneRaw(spec.Filter), cloneRaw(spec.Sort), cloneRaw(spec.Projection)
	spec.Min, spec.Max = cloneRaw(spec.Min), cloneRaw(spec.Max)
	spec.Hint = bson.RawValue{Type: spec.Hint.Type, Value: append([]byte(nil), spec.Hint.Value...)}
	cur, err := s.eng.Find(ctx, req.DB, coll, spec)
	if err != nil {
		return nil, err
	}
	if batchSize < 0 {
		return s.cursorReplyEmpty(req, cur, req.DB+"."+coll, copts.noTimeout)
	}
	return s.cursorReply(ctx, req, cur, req.DB+"."+coll, batchSize, copts)
}

// pointID recognizes the commonest query, find {_id: <value>} with no
// other shaping, which needs no compiled filter, plan or cursor: at most one
// document can match. Values that are operators, arrays or regexes match
// differently and take the general path.
func pointID(spec engine.FindSpec) (bsoncore.Value, bool) {
	if spec.Sort != nil || spec.Projection != nil || spec.Skip != 0 || spec.Hint.Type != 0 ||
		spec.ReturnKey || spec.Min != nil || spec.Max != nil {
		return bsoncore.Value{}, false
	}
	elems, err := bsoncore.Document(spec.Filter).Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return bsoncore.Value{}, false
	}
	v := elems[0].Value()
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeNull,
		bsoncore.TypeUndefined, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return bsoncore.Value{}, false
	case bsoncore.TypeDouble:
		if f := v.Double(); f != f {
			return bsoncore.Value{}, false
		}
	}
	return v, true
}

// cursorReplyEmpty opens a cursor with an empty first batch (batchSize 0).
func (s *Server) cursorReplyEmpty(req *Request, src batchSource, ns string, noTimeout bool) (bson.Raw, error) {
	id, err := s.cursors.add(req, src, ns, noTimeout)
	if err != nil {
		return nil, err
	}
	return appendCursorReply(req, "firstBatch", nil, id, ns)
}

func cloneRaw(r bson.Raw) bson.Raw {
	if r == nil {
		return nil
	}
	return append(bson.Raw(nil), r...)
}

func (s *Server) findAndModify(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var spec engine.FindAndModifySpec
	var u bson.RawValue
	var lv *engine.Let
	var af []bson.Raw
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case "query":
			spec.Filter, err = argDoc("findAndModify", "query", v)
		case "sort":
			spec.Sort, err = argDoc("findAndModify", "sort", v)
		case "fields":
			spec.Fields, err = argDoc("findAndModify", "fields", v)
		case "remove":
			spec.Remove, err = argBool("findAndModify", "remove", v)
		case "update":
			u = v
		case "new":
			spec.New, err = argBool("findAndModify", "new", v)
		case "upsert":
			spec.Upsert, err = argBool("findAndModify", "upsert", v)
		case "arrayFilters":
			var arr bson.RawArray
			if arr, err = argArray("findAndModify", "arrayFilters", v); err == nil {
				vals, _ := arr.Values()
				for _, f := range vals {
					if d, ok := f.DocumentOK(); ok {
						af = append(af, d)
					}
				}
			}
		case "hint":
			spec.Hint, err = argHint(v)
		case "collation":
			err = checkCollation(v)
		case "bypassDocumentValidation":
			spec.BypassDocumentValidation, err = argBool("findAndModify", "bypassDocumentValidation", v)
		case "let":
			lv, err = s.parseLet("findAndModify", v)
		default:
			err = unknownField("findAndModify", key)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case spec.Remove && u.Type != 0:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both an update and remove=true")
	case !spec.Remove && u.Type == 0:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	case spec.Remove && spec.Upsert:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both upsert=true and remove=true")
	case spec.Remove && spec.New:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
	}
	if spec.Filter, err = lv.Filter(spec.Filter); err != nil {
		return nil, err
	}
	if spec.Fields, err = lv.Projection(spec.Fields); err != nil {
		return nil, err
	}
	if u.Type != 0 {
		if spec.Update, err = compileUpdate(u, af, false, lv, s.clock.Now()); err != nil {
			return nil, err
		}
	}
	res, err := s.eng.FindAndModify(ctx, req.DB, coll, spec)
	if err != nil {
		return nil, err
	}
	leo := bson.D{{Key: "n", Value: int32(res.N)}}
	if !spec.Remove {
		leo = append(leo, bson.E{Key: "updatedExisting", Value: res.UpdatedExisting})
	}
	if res.Upserted.Type != 0 {
		leo = append(leo, bson.E{Key: "upserted", Value: res.Upserted})
	}
	var value any = nil
	if res.Value != nil {
		value = res.Value
	}
	return okReply(bson.E{Key: "lastErrorObject", Value: leo}, bson.E{Key: "value", Value: value})
}

func (s *Server) count(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var filter bson.Raw
	var skip, limit int64
	var hint bson.RawValue
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case "query":
			if v.Type != bson.TypeNull {
				filter, err = argDoc("count", "query", v)
			}
		case "skip":
			skip, err = argInt64("count", "skip", v)
			if err == nil && skip < 0 {
				err = mongoerr.New(mongoerr.BadValue, "skip value is negative in count query")
			}
		case "limit":
			limit, err = argInt64("count", "limit", v)
			if limit < 0 {
				limit = -limit
			}
		case "hint":
			hint, err = argHint(v)
		case "collation":
			err = checkCollation(v)
		case "fields", "query_options":
		default:
			err = unknownField("count", key)
		}
		if err != nil {
			return nil, err
		}
	}
	n, err := s.eng.Count(ctx, req.DB, coll, filter, skip, limit, hint)
	if err != nil {
		return nil, err
	}
	idx, dst := req.beginReply()
	dst = bsoncore.AppendInt32Element(dst, "n", int32(n))
	return req.endReply(idx, dst)
}

func (s *Server) distinct(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	var key string
	haveKey := false
	var filter bson.Raw
	for k, v := range cmdArgs(req.Body) {
		switch string(k) {
		case "key":
			key, err = argString("distinct", "key", v)
			haveKey = true
		case "query":
			if v.Type != bson.TypeNull {
				filter, err = argDoc("distinct", "query", v)
			}
		case "collation":
			err = checkCollation(v)
		default:
			// hint included: MongoDB takes it from 7.1 on, and the 7.0
			// Lethe presents as refuses it rather than ignore it.
			err = unknownField("distinct", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveKey {
		return nil, missingField("distinct", "key")
	}
	vals, err := s.eng.Distinct(ctx, req.DB, coll, key, filter)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		arr.AppendValue(v)
	}
	idx, dst := req.beginReply()
	dst = bsoncore.AppendArrayElement(dst, "values", arr.Build())
	return req.endReply(idx, dst)
}

func (s *Server) aggregate(ctx context.Context, req *Request) (bson.Raw, error) {
	v := firstValue(req.Body)
	_, onCollection := v.StringValueOK()
	coll := ""
	if onCollection {
		var err error
		if coll, err = collectionName(req); err != nil {
			return nil, err
		}
	}
	var err error
	var pipeline []bson.Raw
	havePipeline, haveCursor, allowDiskUse := false, false, false
	batchSize := 101
	var hint bson.RawValue
	var lv *engine.Let
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case "pipeline":
			pipeline, err = statements(req, "aggregate", "pipeline", v)
			havePipeline = true
		case "cursor":
			if err = checkCursorBatchSize(v); err == nil {
				err = cursorOption("aggregate", v, &batchSize)
			}
			haveCursor = err == nil
		case "explain":
			var explain bool
			if explain, err = argStrictBool("explain", v); err == nil && explain {
				err = mongoerr.New(mongoerr.NotImplemented, "aggregate with explain: true is not supported; run {explain: {aggregate: ...}}")
			}
		case "collation":
			err = checkCollation(v)
		case "allowDiskUse":
			allowDiskUse, err = argStrictBool("allowDiskUse", v)
		case "hint":
			hint, err = argHint(v)
		case "let":
			lv, err = s.parseLet("aggregate", v)
		case "bypassDocumentValidation":
			_, err = argStrictBool("bypassDocumentValidation", v)
		default:
			err = unknownField("aggregate", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if !havePipeline {
		return nil, missingField("aggregate", "pipeline")
	}
	if !haveCursor {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	if pipeline, err = lv.Pipeline(pipeline); err != nil {
		return nil, err
	}
	var docs []bson.Raw
	var source engine.Incarnation
	switch {
	case !onCollection && len(pipeline) > 0 && pipeline[0].Lookup("$currentOp").Type != 0:
		coll = "$cmd.aggregate"
		docs, err = s.eng.ApplyStages(ctx, s.currentOps(), pipeline[1:])
	case !onCollection:
		return nil, mongoerr.New(mongoerr.NotImplemented, "aggregate with {aggregate: 1} supports only $currentOp")
	case len(pipeline) > 0 && pipeline[0].Lookup("$collStats").Type != 0:
		if docs, err = s.collStatsStage(req.DB, coll, pipeline[0]); err == nil {
			docs, err = s.eng.ApplyStages(ctx, docs, pipeline[1:])
		}
	default:
		var res engine.AggregateResult
		res, err = s.eng.AggregateStream(ctx, req.DB, coll, pipeline, engine.AggregateOptions{AllowDiskUse: allowDiskUse, Hint: hint})
		docs, source = res.Docs, res.Source
	}
	if err != nil {
		return nil, err
	}
	if batchSize == 0 {
		return s.cursorReplyEmpty(req, &sliceSource{docs: docs, source: source}, req.DB+"."+coll, false)
	}
	return s.cursorReply(ctx, req, &sliceSource{docs: docs, source: source}, req.DB+"."+coll, batchSize, cursorOptions{})
}
