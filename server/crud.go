package server

import (
	"context"

	"github.com/lethedb/lethe/queryargs"
	"github.com/lethedb/lethe/writestmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

func (s *Server) crudCommands() []commandDef {
	cmds := []commandDef{
		{name: "insert", handle: s.insert},
		{name: "update", handle: s.update},
		{name: "delete", handle: s.delete},
		{name: "find", handle: s.find},
		{name: "findAndModify", aliases: []string{"findandmodify"}, handle: s.findAndModify},
		{name: "count", handle: s.count},
		{name: "distinct", handle: s.distinct},
		{name: "aggregate", handle: s.aggregate},
	}
	cmds = append(cmds, s.deploymentCommands()...)
	return append(cmds, s.explainCommands()...)
}

// collectionName reads the command's first value as a collection name.
func collectionName(req *Request) (string, error) {
	name, err := command.CollectionArg(&req.Request)
	if err != nil {
		return "", err
	}
	if err := engine.ValidateNamespace(req.DB, name); err != nil {
		return "", err
	}
	return name, nil
}

// statements returns a command's array of documents from its body
// (statements, stages, index specs); callers read an OP_MSG document
// sequence of the same name from req.Sequences themselves.
func statements(_ *Request, cmd, field string, v bson.RawValue) ([]bson.Raw, error) {
	return writestmt.DocArray(cmd, field, v)
}

// bypassValidation reads a write command's bypassDocumentValidation.
func bypassValidation(cmd string, body bson.Raw) (bool, error) {
	v, err := body.LookupErr("bypassDocumentValidation")
	if err != nil {
		return false, nil
	}
	return command.Bool(cmd, "bypassDocumentValidation", v)
}

// writeErrorsElement appends writeErrors: [{index, code, codeName, errmsg, ...}].
func writeErrorsElement(errs []engine.WriteError) bson.E {
	arr := make(bson.A, 0, len(errs))
	for _, we := range errs {
		me, _ := command.AsMongoError(we.Err)
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
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "documents":
			docs, err = statements(req, "insert", "documents", v)
		case "ordered":
			ordered, err = command.Bool("insert", "ordered", v)
		case "bypassDocumentValidation":
		default:
			err = command.UnknownField("insert", key)
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
	txn, unlock, err := s.retryTxn(ctx, req)
	if err != nil {
		return nil, err
	}
	opts := engine.WriteOptions{BypassDocumentValidation: bypass}
	if txn != nil {
		defer unlock()
		// A statement's id is its place in the command, as in MongoDB
		// when the command gives none.
		opts.Txn, opts.StmtIDs = txn, make([]int32, len(docs))
		for i := range opts.StmtIDs {
			opts.StmtIDs[i] = int32(i)
		}
	}
	res, err := s.eng.Insert(ctx, req.DB, coll, docs, ordered, opts)
	if err != nil {
		return nil, err
	}
	if len(res.Errors) == 0 {
		idx, dst := req.BeginReply()
		dst = bsoncore.AppendInt32Element(dst, "n", int32(res.N))
		dst = appendRetried(dst, txn)
		return req.EndReply(idx, dst)
	}
	return command.OK(retriedElements([]bson.E{{Key: "n", Value: int32(res.N)}}, txn, writeErrorsElement(res.Errors))...)
}

// writeStatements parses what update and delete share: the statements,
// from the body or an OP_MSG document sequence, ordered and let.
func (s *Server) writeStatements(req *Request, cmd, field string) (stmts []bson.Raw, ordered bool, lv *engine.Let, err error) {
	ordered = true
	stmts = req.Sequences[field]
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case field:
			stmts, err = statements(req, cmd, field, v)
		case "ordered":
			ordered, err = command.Bool(cmd, "ordered", v)
		case "let":
			lv, err = queryargs.Let(cmd, v, s.clock)
		case "bypassDocumentValidation":
		default:
			err = command.UnknownField(cmd, key)
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
	parsed := make([]writestmt.Update, len(stmts))
	for i, raw := range stmts {
		if parsed[i], err = writestmt.ParseUpdate(raw); err != nil {
			return nil, err
		}
	}
	bypass, err := bypassValidation("update", req.Body)
	if err != nil {
		return nil, err
	}
	txn, unlock, err := s.retryTxn(ctx, req)
	if err != nil {
		return nil, err
	}
	if txn != nil {
		defer unlock()
	}
	var n, modified int64
	var upserted bson.A
	add := func(i int, res engine.UpdateResult) {
		n += res.Matched
		modified += res.Modified
		if res.Upserted.Type != 0 {
			n++
			upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: res.Upserted}})
		}
	}
	now := s.clock.Now() // $$NOW and $currentDate: one time for the command
	errs, err := runStatements(stmts, ordered, func(i int, _ bson.Raw) error {
		st := parsed[i]
		var err error
		if st.Collation.Type != 0 {
			if err := command.CheckCollation("collation", st.Collation); err != nil {
				return err
			}
		}
		ctx := statementCollation(ctx, st.Collation)
		if st.Spec.Filter, err = lv.Filter(st.Spec.Filter); err != nil {
			return err
		}
		// A statement's constants c reach its pipeline only, over let.
		pipelineLet := lv
		if st.C != nil {
			if st.U.Type != bson.TypeArray {
				return mongoerr.New(51198, "Constant values may only be specified for pipeline updates")
			}
			c, err := engine.ParseLet(st.C, now)
			if err != nil {
				return err
			}
			pipelineLet = lv.With(c)
		}
		if st.Spec.Update, err = s.eng.CompileUpdateFor(ctx, req.DB, coll, st.U, st.ArrayFilters, st.Spec.Multi, pipelineLet, now); err != nil {
			return err
		}
		st.Spec.BypassDocumentValidation = bypass
		st.Spec.Txn = stmt(txn, i)
		res, err := s.eng.Update(ctx, req.DB, coll, st.Spec)
		if err != nil {
			return err
		}
		add(i, res)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(upserted) == 0 && len(errs) == 0 {
		// The commonest reply, built in place rather than marshalled.
		idx, dst := req.BeginReply()
		dst = bsoncore.AppendInt32Element(dst, "n", int32(n))
		dst = bsoncore.AppendInt32Element(dst, "nModified", int32(modified))
		dst = appendRetried(dst, txn)
		return req.EndReply(idx, dst)
	}
	elems := []bson.E{{Key: "n", Value: int32(n)}, {Key: "nModified", Value: int32(modified)}}
	if len(upserted) > 0 {
		elems = append(elems, bson.E{Key: "upserted", Value: upserted})
	}
	elems = retriedElements(elems, txn)
	if len(errs) > 0 {
		elems = append(elems, writeErrorsElement(errs))
	}
	return command.OK(elems...)
}

// runDelete runs one parsed statement of a delete command.
func (s *Server) runDelete(ctx context.Context, db, coll string, st writestmt.Delete, lv *engine.Let, txn *engine.Txn) (int64, error) {
	if st.Collation.Type != 0 {
		if err := command.CheckCollation("collation", st.Collation); err != nil {
			return 0, err
		}
	}
	ctx = statementCollation(ctx, st.Collation)
	filter, err := lv.Filter(st.Filter)
	if err != nil {
		return 0, err
	}
	if txn != nil {
		return s.eng.Delete(ctx, db, coll, filter, st.Limit, st.Hint, txn)
	}
	return s.eng.Delete(ctx, db, coll, filter, st.Limit, st.Hint)
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
	parsed := make([]writestmt.Delete, len(stmts))
	for i, raw := range stmts {
		if parsed[i], err = writestmt.ParseDelete(raw); err != nil {
			return nil, err
		}
	}
	txn, unlock, err := s.retryTxn(ctx, req)
	if err != nil {
		return nil, err
	}
	if txn != nil {
		defer unlock()
	}
	var n int64
	errs, err := runStatements(stmts, ordered, func(i int, _ bson.Raw) error {
		deleted, err := s.runDelete(ctx, req.DB, coll, parsed[i], lv, stmt(txn, i))
		n += deleted
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return command.OK(retriedElements([]bson.E{{Key: "n", Value: int32(n)}}, txn, writeErrorsElement(errs))...)
	}
	idx, dst := req.BeginReply()
	dst = bsoncore.AppendInt32Element(dst, "n", int32(n))
	dst = appendRetried(dst, txn)
	return req.EndReply(idx, dst)
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
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "query":
			spec.Filter, err = command.Doc("findAndModify", "query", v)
		case "sort":
			spec.Sort, err = command.Doc("findAndModify", "sort", v)
		case "fields":
			spec.Fields, err = command.Doc("findAndModify", "fields", v)
		case "remove":
			spec.Remove, err = command.Bool("findAndModify", "remove", v)
		case "update":
			u = v
		case "new":
			spec.New, err = command.Bool("findAndModify", "new", v)
		case "upsert":
			spec.Upsert, err = command.Bool("findAndModify", "upsert", v)
		case "arrayFilters":
			af, err = writestmt.DocArray("findAndModify", "arrayFilters", v)
		case "hint":
			spec.Hint, err = command.Hint(v)
		case "collation":
			err = command.CheckCollation("collation", v)
		case "bypassDocumentValidation":
			spec.BypassDocumentValidation, err = command.Bool("findAndModify", "bypassDocumentValidation", v)
		case "let":
			lv, err = queryargs.Let("findAndModify", v, s.clock)
		default:
			err = command.UnknownField("findAndModify", key)
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
		if spec.Update, err = s.eng.CompileUpdateFor(ctx, req.DB, coll, u, af, false, lv, s.clock.Now()); err != nil {
			return nil, err
		}
	}
	txn, unlock, err := s.retryTxn(ctx, req)
	if err != nil {
		return nil, err
	}
	spec.Txn = stmt(txn, 0)
	res, err := s.eng.FindAndModify(ctx, req.DB, coll, spec)
	if txn != nil {
		unlock()
	}
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
	elems := []bson.E{{Key: "lastErrorObject", Value: leo}, {Key: "value", Value: value}}
	if txn != nil && len(txn.Retried) > 0 {
		// find_and_modify.cpp's reply to a retry names its statement.
		elems = append(elems, bson.E{Key: "retriedStmtId", Value: txn.Retried[0]})
	}
	return command.OK(elems...)
}
