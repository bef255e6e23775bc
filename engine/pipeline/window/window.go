package window

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// windowStage is $setWindowFields: documents are split into partitions by
// an expression, each partition sorted, and output fields set to the
// results of window functions over windows of the partition.
//
// MongoDB runs it as a $sort on the partition key and sortBy followed by a
// streaming stage. Lethe sorts the input and computes the partitions one
// after the other, which gives the same order of output: by partition key,
// then by sortBy; in memory (Apply) when the input is held anyway, and
// through a sort that spills when the request may use the disk
// (windowspill.go).
type windowStage struct {
	partitionBy *expr.Expr  // nil: one partition
	sort        *query.Sort // nil: input order
	sortField   *expr.Expr  // the one field of sortBy, for range windows and fills
	outputs     []windowOutput
}

// windowOutput is one field of output and the function that computes it.
type windowOutput struct {
	path []string
	fn   windowFunc
}

func compileSetWindowFields(c *compiler, name string, arg bson.RawValue) (pipeline.Stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the %s stage specification must be an object, found %s", name, values.TypeNameOf(arg))
	}
	w := &windowStage{}
	var output bson.Raw
	var sortSpec bson.Raw
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "partitionBy":
			ex, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			if isConstantArray(v) {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
			}
			w.partitionBy = ex
		case "sortBy":
			d, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'", values.TypeNameOf(v))
			}
			sortSpec = d
		case "output":
			d, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$setWindowFields.output' is the wrong type '%s', expected type 'object'", values.TypeNameOf(v))
			}
			output = d
		default:
			return nil, mongoerr.New(mongoerr.Code(40415), "BSON field '$setWindowFields.%s' is an unknown field.", el.Key())
		}
	}
	if output == nil {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field '$setWindowFields.output' is missing but a required field")
	}
	var sortBy []query.SortField
	if sortSpec != nil {
		s, err := query.CompileSortWith(sortSpec, c.p.Collator())
		if err != nil {
			return nil, err
		}
		if len(s.Fields()) == 0 {
			return nil, mongoerr.New(mongoerr.Code(15976), "$sort stage must have at least one sort key")
		}
		w.sort, sortBy = s, s.Fields()
		if len(sortBy) == 1 {
			ex, err := expr.CompileExpr(bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "$"+sortBy[0].Path)})
			if err != nil {
				return nil, err
			}
			w.sortField = ex
		}
	}
	outs, _ := output.Elements()
	var paths []string
	for _, el := range outs {
		path, err := outputPath(el.Key())
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if conflicting(p, el.Key()) {
				return nil, mongoerr.New(mongoerr.Code(6307900), "$setWindowFields 'output' specification contains two conflicting paths")
			}
		}
		paths = append(paths, el.Key())
		fnSpec, ok := el.Value().DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "The field '%s' must be an object", el.Key())
		}
		fn, err := c.windowFunction(fnSpec, sortBy)
		if err != nil {
			return nil, err
		}
		w.outputs = append(w.outputs, windowOutput{path: path, fn: fn})
	}
	return w, nil
}

// outputPath checks the name of an output field, a dotted path.
func outputPath(name string) ([]string, error) {
	if name == "" {
		return nil, mongoerr.New(mongoerr.Code(40352), "FieldPath cannot be constructed with empty string")
	}
	parts := strings.Split(name, ".")
	for _, p := range parts {
		switch {
		case p == "":
			return nil, mongoerr.New(mongoerr.Code(15998), "FieldPath field names may not be empty strings.")
		case strings.HasPrefix(p, "$"):
			return nil, mongoerr.New(mongoerr.Code(16410), "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return parts, nil
}

// conflicting reports whether one dotted path is the other or a prefix of
// it, so that both cannot be set.
func conflicting(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || strings.HasPrefix(b, a+".")
}

// isConstantArray reports whether a partitionBy is an array literal, which
// MongoDB refuses when it parses the stage.
func isConstantArray(v bson.RawValue) bool {
	if v.Type == bson.TypeArray {
		return true
	}
	d, _ := v.DocumentOK()
	elems, _ := d.Elements()
	return len(elems) == 1 && elems[0].Key() == "$literal" && elems[0].Value().Type == bson.TypeArray
}

func (*windowStage) Blocks() {}

// windowExceeded is MongoDB's error of a $setWindowFields past its limit
// without allowDiskUse.
func windowExceeded(limit int64) error {
	return mongoerr.New(mongoerr.Code(5414201), "Exceeded memory limit in DocumentSourceSetWindowFields, max allowed is %d bytes", limit)
}

func (w *windowStage) Apply(r *pipeline.Run, docs []bson.Raw, out pipeline.Limit) ([]bson.Raw, error) {
	// The input is held whole, as the $sort MongoDB puts before the stage
	// would hold it.
	exceeded := windowExceeded
	if w.partitionBy != nil || w.sort != nil {
		exceeded = pipeline.SortExceeded
	}
	in := pipeline.NewHeld(r.Blocking(exceeded), 0)
	if err := in.Add(pipeline.SizeOf(docs)); err != nil {
		return nil, err
	}
	keys, err := w.partitionKeys(r, docs)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	if keys != nil || w.sort != nil {
		slices.SortStableFunc(order, func(a, b int) int {
			if keys != nil {
				if c := keycodec.Compare(keys[a], keys[b]); c != 0 {
					return c
				}
			}
			if w.sort != nil {
				return w.sort.Compare(docs[a], docs[b])
			}
			return 0
		})
	}
	sorted := make([]bson.Raw, len(docs))
	for i, j := range order {
		sorted[i] = docs[j]
	}
	h := pipeline.NewHeld(out, int64(pipeline.SizeOf(sorted)))
	for start := 0; start < len(sorted); {
		end := len(sorted)
		if keys != nil {
			end = start + 1
			for end < len(sorted) && keycodec.Compare(keys[order[start]], keys[order[end]]) == 0 {
				end++
			}
		}
		if err := w.partition(r, sorted[start:end], r.Blocking(windowExceeded), &h); err != nil {
			return nil, err
		}
		start = end
	}
	return sorted, nil
}

// partitionKeys evaluates partitionBy for every document: missing counts
// as null, and an array is refused. Without partitionBy it returns nil.
func (w *windowStage) partitionKeys(r *pipeline.Run, docs []bson.Raw) ([]bsoncore.Value, error) {
	if w.partitionBy == nil {
		return nil, nil
	}
	keys := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		if i%256 == 0 && r.Context().Err() != nil {
			return nil, r.Context().Err()
		}
		v, err := values.EvalOrNull(r.Context(), w.partitionBy, d)
		if err != nil {
			return nil, err
		}
		if v.Type == bsoncore.TypeArray {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
		}
		// Partitions are of values equal under the collation.
		keys[i] = w.partitionBy.Collator().Key(v)
	}
	return keys, nil
}

// partition computes the output fields of the documents of one partition,
// in sorted order, and sets them in docs; what the documents and the
// window functions hold counts against limit, and h counts the bytes of
// the output.
func (w *windowStage) partition(r *pipeline.Run, docs []bson.Raw, limit pipeline.Limit, h *pipeline.Held) error {
	p := &partition{r: r, docs: docs, w: w, held: pipeline.NewHeld(limit, 0)}
	if err := p.held.Add(pipeline.SizeOf(docs)); err != nil {
		return err
	}
	results := make([][]bsoncore.Value, len(w.outputs))
	for i, o := range w.outputs {
		results[i] = make([]bsoncore.Value, len(docs))
		if err := o.fn.compute(p, results[i]); err != nil {
			return err
		}
	}
	for j, d := range docs {
		nd := []byte(d)
		for i, o := range w.outputs {
			nd = setPathThroughArrays(nd, o.path, results[i][j])
		}
		if err := h.Add(len(nd) - len(d)); err != nil {
			return err
		}
		docs[j] = nd
	}
	return nil
}

// partition is one partition of a $setWindowFields, sorted.
type partition struct {
	r     *pipeline.Run
	docs  []bson.Raw
	w     *windowStage
	held  pipeline.Held // what the window functions hold
	sorts []bsoncore.Value
	steps int
}

// step counts a unit of work, and stops with the request's context.
func (p *partition) step() error {
	if p.steps++; p.steps%1024 == 0 {
		return p.r.Context().Err()
	}
	return nil
}

// sortValues are the values of the sortBy field in the documents, missing
// as Type 0, evaluated once.
func (p *partition) sortValues() ([]bsoncore.Value, error) {
	if p.sorts != nil || p.w.sortField == nil {
		return p.sorts, nil
	}
	vals := make([]bsoncore.Value, len(p.docs))
	for i, d := range p.docs {
		v, err := p.w.sortField.EvalContext(p.r.Context(), d)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	p.sorts = vals
	return vals, nil
}
