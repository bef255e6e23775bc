package query

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

func TestCompileSortKeyLimit(t *testing.T) {
	spec := func(n int) bson.Raw {
		d := bson.D{}
		for i := range n {
			d = append(d, bson.E{Key: fmt.Sprintf("f%d", i), Value: 1})
		}
		b, _ := bson.Marshal(d)
		return b
	}
	if _, err := CompileSort(spec(32)); err != nil {
		t.Errorf("a sort on 32 fields: %v", err)
	}
	if _, err := CompileSort(spec(33)); mongoerr.CodeOf(err) != 13103 {
		t.Errorf("a sort on 33 fields = %v, want code 13103", err)
	}
}
