package engine

import (
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The model's operation: plain data, and its log line.

// modelOp is one generated operation. It is plain data, so that a log of
// them replays against a fresh engine and model (for shrinking).
type modelOp struct {
	Kind    string
	Docs    []bson.Raw
	Ordered bool
	Filter  bson.Raw
	Upd     bson.Raw   // operators or replacement
	Pipe    []bson.Raw // an update pipeline, when set
	Multi   bool
	Upsert  bool
	Remove  bool
	New     bool
	Sort    bson.Raw
	Proj    bson.Raw
	Skip    int64
	Limit   int64
	Key     string
	Specs   []bson.Raw
	Which   bson.RawValue
	IxName  string
	IxKey   bson.Raw
	Expire  bson.RawValue
	Dur     time.Duration
	Hint    bson.RawValue
	// Collation is the collation a count, find, write or aggregate names
	// (model_collate_test.go); nil names none.
	Collation bson.Raw
	Hide      int // collMod hidden: 0 unchanged, 1 hide, 2 unhide
	// setValidation: the new validator, level and action (nil or "":
	// unchanged); Bypass skips the validator on a write.
	Validator bson.Raw
	Level     string
	Action    string
	Bypass    bool
	// preImages: the changeStreamPreAndPostImages setting collMod sets.
	PreImages bool
	// Retry makes a write a retryable write that the step repeats with
	// the same transaction number (model_retry_test.go).
	Retry bool
	// Let is a command's let: constants the filter's $expr and an update
	// pipeline read as $$name.
	Let bson.Raw
	// find: the hinted index's key range, and returnKey.
	Min, Max  bson.Raw
	ReturnKey bool
	// aggregate: the stages after the leading $match of Filter and $sort,
	// or after a $geoNear of GeoNear's spec, whose query is Filter
	// (model_near_test.go).
	Stages  []bson.Raw
	GeoNear bson.Raw
	// createView, dropView, readView (model_views_test.go): the view, and
	// the definition created.
	View, ViewOn string
	ViewPipe     []bson.Raw
	// InTxn, for a statement or a txn* operation, is the transaction
	// slot plus one (model_txn_test.go); 0 for a plain operation.
	InTxn int
}

func (op *modelOp) String() string {
	var b strings.Builder
	if op.InTxn != 0 {
		fmt.Fprintf(&b, "[txn%d] ", op.InTxn)
	}
	b.WriteString(op.Kind)
	if op.Kind == "preImages" {
		fmt.Fprintf(&b, " enabled=%v", op.PreImages)
	}
	raw := func(name string, r bson.Raw) {
		if r != nil {
			fmt.Fprintf(&b, " %s=%s", name, r.String())
		}
	}
	rawList := func(name string, rs []bson.Raw) {
		if rs != nil {
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = r.String()
			}
			fmt.Fprintf(&b, " %s=[%s]", name, strings.Join(parts, ", "))
		}
	}
	rawList("docs", op.Docs)
	if op.Kind == "insert" {
		fmt.Fprintf(&b, " ordered=%v", op.Ordered)
	}
	raw("filter", op.Filter)
	raw("collation", op.Collation)
	raw("update", op.Upd)
	rawList("pipeline", op.Pipe)
	for _, f := range []struct {
		name string
		on   bool
	}{{"multi", op.Multi}, {"upsert", op.Upsert}, {"remove", op.Remove}, {"new", op.New}} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	raw("sort", op.Sort)
	raw("proj", op.Proj)
	if op.Skip != 0 || op.Limit != 0 {
		fmt.Fprintf(&b, " skip=%d limit=%d", op.Skip, op.Limit)
	}
	if op.Key != "" {
		b.WriteString(" key=" + op.Key)
	}
	rawList("specs", op.Specs)
	if op.Which.Type != 0 {
		b.WriteString(" which=" + op.Which.String())
	}
	if op.IxName != "" {
		b.WriteString(" index=" + op.IxName)
	}
	raw("keyPattern", op.IxKey)
	if op.Expire.Type != 0 {
		b.WriteString(" expireAfterSeconds=" + op.Expire.String())
	}
	if op.Dur != 0 {
		fmt.Fprintf(&b, " by=%v", op.Dur)
	}
	if op.Hint.Type != 0 {
		b.WriteString(" hint=" + op.Hint.String())
	}
	if op.Hide != 0 {
		fmt.Fprintf(&b, " hidden=%v", op.Hide == 1)
	}
	raw("validator", op.Validator)
	if op.Level != "" {
		b.WriteString(" validationLevel=" + op.Level)
	}
	if op.Action != "" {
		b.WriteString(" validationAction=" + op.Action)
	}
	if op.Bypass {
		b.WriteString(" bypassDocumentValidation")
	}
	if op.Retry {
		b.WriteString(" retry")
	}
	raw("let", op.Let)
	raw("min", op.Min)
	raw("max", op.Max)
	if op.ReturnKey {
		b.WriteString(" returnKey")
	}
	raw("geoNear", op.GeoNear)
	rawList("stages", op.Stages)
	if op.View != "" {
		b.WriteString(" view=" + op.View)
	}
	if op.Kind == "createView" || op.Kind == "modifyView" {
		b.WriteString(" viewOn=" + op.ViewOn)
		rawList("viewPipeline", op.ViewPipe)
	}
	return b.String()
}
