package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// Merge is a compiled $merge: where its documents go and what happens to
// each, which the Catalog carries out.
type Merge struct {
	DB, Coll string
	// On names the fields that identify a document of the target; nil
	// means _id.
	On []string
	// WhenMatched is "replace", "keepExisting", "merge", "fail" or
	// "pipeline", and WhenNotMatched "insert", "discard" or "fail".
	WhenMatched, WhenNotMatched string
	// Pipeline is the update of whenMatched: "pipeline", which reads the
	// incoming document as $$new and the variables of let.
	Pipeline []bson.Raw

	let []letVar
}

// MergeDoc is one document for $merge and the values of the variables the
// whenMatched pipeline runs with.
type MergeDoc struct {
	Doc  bson.Raw
	Vars Vars
}

// mergeStage is $merge.
type mergeStage struct {
	m Merge
}

func (*mergeStage) writes() string { return "$merge" }

// blocks: $merge, like $out, reads all its input before it writes.
func (*mergeStage) blocks() {}

// mergeModes are the combinations of whenMatched and whenNotMatched that
// MongoDB supports.
var mergeModes = map[[2]string]bool{
	{"replace", "insert"}: true, {"replace", "fail"}: true, {"replace", "discard"}: true,
	{"merge", "insert"}: true, {"merge", "fail"}: true, {"merge", "discard"}: true,
	{"keepExisting", "insert"}: true,
	{"fail", "insert"}:         true,
	{"pipeline", "insert"}:     true, {"pipeline", "fail"}: true, {"pipeline", "discard"}: true,
}

func compileMerge(c *compiler, name string, arg bson.RawValue) (stage, error) {
	m := Merge{DB: c.opts.DB, WhenMatched: "merge", WhenNotMatched: "insert"}
	var letDoc bson.Raw
	hasLet := false
	switch arg.Type {
	case bson.TypeString:
		m.Coll = arg.StringValue()
	case bson.TypeEmbeddedDocument:
		hasInto := false
		elems, _ := arg.Document().Elements()
		for _, el := range elems {
			v := el.Value()
			switch el.Key() {
			case "into":
				switch v.Type {
				case bson.TypeString:
					m.Coll = v.StringValue()
				case bson.TypeEmbeddedDocument:
					var err error
					if m.DB, m.Coll, err = namespaceSpec(v.Document(), "$merge.into", "db", "coll"); err != nil {
						return nil, err
					}
				default:
					return nil, mongoerr.New(mongoerr.Code(51178), "$merge 'into' field  must be either a string or an object, but found %s", values.TypeNameOf(v))
				}
				hasInto = true
			case "on":
				on, err := mergeOn(v)
				if err != nil {
					return nil, err
				}
				m.On = on
			case "let":
				doc, ok := v.DocumentOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$merge.let' is the wrong type '%s', expected type 'object'", values.TypeNameOf(v))
				}
				letDoc, hasLet = doc, true
			case "whenMatched":
				switch v.Type {
				case bson.TypeString:
					m.WhenMatched = v.StringValue()
					switch m.WhenMatched {
					case "replace", "keepExisting", "merge", "fail":
					default:
						return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$merge.whenMatched' is not a valid value.", m.WhenMatched)
					}
				case bson.TypeArray:
					p, err := subPipeline(v)
					if err != nil {
						return nil, err
					}
					// The update it is compiles again with $$new and the
					// let bound, for each document.
					if _, err := update.CompilePipeline(p, update.Options{Now: c.opts.Now}); err != nil && mongoerr.CodeOf(err) != undefinedVariable {
						return nil, err
					}
					m.WhenMatched, m.Pipeline = "pipeline", p
				default:
					return nil, mongoerr.New(mongoerr.Code(51191), "$merge 'whenMatched' field  must be either a string or an array, but found %s", values.TypeNameOf(v))
				}
			case "whenNotMatched":
				s, ok := v.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$merge.whenNotMatched' is the wrong type '%s', expected type 'string'", values.TypeNameOf(v))
				}
				switch s {
				case "insert", "discard", "fail":
				default:
					return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$merge.whenNotMatched' is not a valid value.", s)
				}
				m.WhenNotMatched = s
			default:
				return nil, mongoerr.New(mongoerr.Code(40415), "BSON field '$merge.%s' is an unknown field.", el.Key())
			}
		}
		if !hasInto {
			return nil, mongoerr.New(mongoerr.Code(40414), "BSON field '$merge.into' is missing but a required field")
		}
	default:
		return nil, mongoerr.New(mongoerr.Code(51182), "%s only supports a string or object argument, not %s", name, values.TypeNameOf(arg))
	}
	if err := checkTarget(m.DB, m.Coll, name, 31319, 31320, "Cannot"); err != nil {
		return nil, err
	}
	if !mergeModes[[2]string{m.WhenMatched, m.WhenNotMatched}] {
		return nil, mongoerr.New(mongoerr.Code(51181), "Combination of $merge modes 'whenMatched: %s' and 'whenNotMatched: %s' is not supported", m.WhenMatched, m.WhenNotMatched)
	}
	if m.WhenMatched != "pipeline" {
		if hasLet {
			return nil, mongoerr.New(mongoerr.Code(51199), "Cannot use 'let' variables with 'whenMatched: %s' mode", m.WhenMatched)
		}
		return &mergeStage{m: m}, nil
	}
	if v, err := letDoc.LookupErr("new"); err == nil {
		if s, ok := v.StringValueOK(); !ok || s != "$$ROOT" {
			return nil, mongoerr.New(mongoerr.Code(51273), "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'")
		}
	} else {
		m.let = append(m.let, letVar{name: "new", ex: rootExpr(c)})
	}
	vars, err := c.letVars(letDoc)
	if err != nil {
		return nil, err
	}
	m.let = append(m.let, vars...)
	return &mergeStage{m: m}, nil
}

// rootExpr is $$ROOT, the default value of $merge's $$new.
func rootExpr(c *compiler) *expr.Expr {
	ex, err := c.expr(bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "$$ROOT")})
	if err != nil {
		panic(err) // $$ROOT always compiles
	}
	return ex
}

// mergeOn reads the on option of $merge.
func mergeOn(v bson.RawValue) ([]string, error) {
	var on []string
	switch v.Type {
	case bson.TypeString:
		on = []string{v.StringValue()}
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		for _, e := range vals {
			s, ok := e.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Code(51134), "$merge 'on' array elements must be strings, but found %s", values.TypeNameOf(e))
			}
			on = append(on, s)
		}
		if len(on) == 0 {
			return nil, mongoerr.New(mongoerr.Code(51187), "If explicitly specifying $merge 'on', must include at least one field")
		}
	default:
		return nil, mongoerr.New(mongoerr.Code(51186), "$merge 'on' field  must be either a string or an array of strings, but found %s", values.TypeNameOf(v))
	}
	seen := map[string]bool{}
	for _, f := range on {
		if _, err := parsePath(f); err != nil {
			return nil, err
		}
		if seen[f] {
			return nil, mongoerr.New(mongoerr.Code(31465), "Found a duplicate field '%s'", f)
		}
		seen[f] = true
	}
	return on, nil
}

func (s *mergeStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	if r.opts.Catalog == nil {
		return nil, noCatalog("$merge")
	}
	if err := checkSizes(docs); err != nil {
		return nil, err
	}
	in := make([]MergeDoc, len(docs))
	for i, d := range docs {
		in[i].Doc = d
		if s.m.WhenMatched == "pipeline" {
			vars, err := bind(r.ctx, s.m.let, d)
			if err != nil {
				return nil, err
			}
			in[i].Vars = r.withNow(vars)
		}
	}
	return nil, r.opts.Catalog.Merge(r.ctx, &s.m, in)
}
