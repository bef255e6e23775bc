package engine

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collstats"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/storagecheck"
	"github.com/lethedb/lethe/engine/usage"
	"github.com/lethedb/lethe/mongoerr"
)

// CollStats are the figures collStats and dbStats report
// (collstats.Stats).
type CollStats = collstats.Stats

// Stats computes the statistics of db.coll; ok is false if it does not exist.
func (e *Engine) Stats(ctx context.Context, db, coll string) (CollStats, bool, error) {
	var s CollStats
	c := e.collection(db, coll)
	if c == nil {
		return s, false, nil
	}
	st := c.st()
	lo, hi := record.DocRange(st.meta.ID)
	it, err := e.store.Iter(ctx, lo, hi, false)
	if err != nil {
		return s, true, err
	}
	nowMs := e.nowMillis()
	read := 0
	for ok := it.First(); ok; ok = it.Next() {
		// The count is exact (expired documents are absent from it), so
		// it reads every document: a large collection takes long enough
		// that maxTimeMS, killOp and a closed connection must stop it.
		if read++; read&1023 == 0 {
			if err := ctx.Err(); err != nil {
				it.Close()
				return s, true, err
			}
		}
		h, doc, err := record.SplitValue(it.Value())
		if err != nil {
			it.Close()
			return s, true, err
		}
		if st.expired(h, nowMs) {
			continue
		}
		s.Count++
		s.Size += int64(len(doc))
	}
	if err := it.Close(); err != nil {
		return s, true, err
	}
	s.StorageSize, _ = e.store.ApproximateSize(ctx, lo, hi)
	s.NIndexes = 1 + len(st.meta.Indexes)
	s.IndexSizes = map[string]int64{"_id_": 0}
	for _, ix := range st.indexes {
		lo, hi := record.IndexRange(ix.Meta.ID)
		n, _ := e.store.ApproximateSize(ctx, lo, hi)
		s.IndexSizes[ix.Meta.Name] = n
		s.IndexSize += n
	}
	return s, true, nil
}

// ValidateResult is what the validate command reports of a collection
// (storagecheck.Result).
type ValidateResult = storagecheck.Result

// IndexEntryProblem locates one missing or extra index entry.
type IndexEntryProblem = storagecheck.IndexEntryProblem

// Validate checks db.coll's storage against itself: every document parses
// and has exactly the index and expiry entries its contents call for, and
// every entry belongs to a stored document that calls for it (package
// storagecheck). It reads one snapshot, so concurrent writes cause no
// false reports.
func (e *Engine) Validate(ctx context.Context, db, coll string, full bool) (ValidateResult, error) {
	c := e.collection(db, coll)
	if c == nil {
		return ValidateResult{}, mongoerr.New(mongoerr.NamespaceNotFound, "Collection '%s.%s' does not exist to validate.", db, coll)
	}
	// No index build or drop runs while the snapshot is taken. The state
	// is read after the snapshot: a writer marks an index multikey before
	// its batch commits, so the flags cover every document the snapshot
	// holds.
	c.ddl.RLock()
	snap, err := e.store.Snapshot(ctx)
	st := c.st()
	c.ddl.RUnlock()
	if err != nil {
		return ValidateResult{}, fmt.Errorf("engine: validate: %w", err)
	}
	defer snap.Close()
	if st.dropped {
		return ValidateResult{}, mongoerr.New(mongoerr.NamespaceNotFound, "Collection '%s.%s' does not exist to validate.", db, coll)
	}
	return storagecheck.Check(ctx, snap, storagecheck.Collection{
		NS: st.ns(), ID: st.meta.ID, UUID: st.meta.UUID,
		IndexMeta: st.meta.Indexes, Indexes: st.indexes,
		TTL: st.ttl.Enabled, Validator: st.validator, IDCollation: st.idColl,
	}, e.clock.Now(), full)
}

// DatabaseSize is the estimated bytes on disk of a database's collections.
func (e *Engine) DatabaseSize(ctx context.Context, db string) int64 {
	var total int64
	for _, name := range e.CollectionNames(ctx, db) {
		if s, ok, err := e.Stats(ctx, db, name); ok && err == nil {
			total += max(s.StorageSize+s.IndexSize, s.Size)
		}
	}
	return total
}

// LatencyKind is what latencyStats files an operation's latency under
// (usage.LatencyKind), named here for the server.
type LatencyKind = usage.LatencyKind

// The kinds of latencyStats (package usage).
const (
	LatencyReads        = usage.LatencyReads
	LatencyWrites       = usage.LatencyWrites
	LatencyCommands     = usage.LatencyCommands
	LatencyTransactions = usage.LatencyTransactions
)

// RecordLatency files the latency of a command on db.coll under kind. A
// collection that does not exist records nothing.
func (e *Engine) RecordLatency(db, coll string, kind LatencyKind, d time.Duration) {
	if c := e.collection(db, coll); c != nil {
		c.usage.AddLatency(kind, d)
	}
}

// The pipelines over a collection whose first stage reports on it,
// $collStats and $indexStats, rather than read its documents.

// isStatsStage reports whether a pipeline's first stage is $collStats or
// $indexStats.
func isStatsStage(stages []bson.Raw) bool {
	if len(stages) == 0 {
		return false
	}
	name, _, err := pipeline.StageOf(stages[0])
	return err == nil && (name == "$collStats" || name == "$indexStats")
}

// aggregateStats runs a pipeline that starts with $collStats or
// $indexStats: the stage's documents go through the rest of it.
func (e *Engine) aggregateStats(ctx context.Context, db, coll string, stages []bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	p, err := pipeline.Compile(stages, e.pipelineOptions(db, opts))
	if err != nil {
		return nil, err
	}
	docs, err := e.statsDocs(db, coll, stages[0], opts)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, pipeline.Slice(docs))
}

// collStatsDoc is the one document of $collStats (collstats.CollStatsDoc).
func (e *Engine) collStatsDoc(ctx context.Context, db, coll string, spec pipeline.CollStatsSpec, host string) (bson.Raw, error) {
	now := e.clock.Now()
	var u *usage.Counters
	if c := e.collection(db, coll); c != nil {
		u = &c.usage
	}
	return collstats.CollStatsDoc(db, coll, spec, host, now, u, func() (CollStats, bool, error) { return e.Stats(ctx, db, coll) })
}

// indexStatsDocs are the documents of $indexStats
// (collstats.IndexStatsDocs). A collection that does not exist has none.
func (e *Engine) indexStatsDocs(db, coll, host string) ([]bson.Raw, error) {
	c := e.collection(db, coll)
	if c == nil {
		return nil, nil
	}
	return collstats.IndexStatsDocs(host, c.st().meta.Indexes, &c.usage, e.clock)
}
