package window

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline"
)

func init() {
	pipeline.RegisterStage("$setWindowFields", func(c *pipeline.Compiler, name string, arg bson.RawValue) (pipeline.Stage, error) {
		return compileSetWindowFields(&compiler{p: c}, name, arg)
	})
}

// compiler carries what compiling a $setWindowFields needs of the
// compilation of its pipeline.
type compiler struct {
	p *pipeline.Compiler
}

// expr compiles an expression of the stage.
func (c *compiler) expr(v bson.RawValue) (*expr.Expr, error) {
	return c.p.Expr(v)
}
