package tikvkv

import (
	"os"
	"testing"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/kvtest"
)

// testOptions keep client-go quiet unless LETHE_TIKV_LOG is set: it logs
// every lock it meets, and tests meet many on purpose.
func testOptions(prefix string) Options {
	o := Options{Prefix: prefix}
	if os.Getenv("LETHE_TIKV_LOG") == "" {
		o.Logger = zap.NewNop()
	}
	return o
}

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store {
		s, err := OpenMock(testOptions(""))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
