package server

import (
	"context"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

func (s *Server) ttlCommands() []commandDef {
	return []commandDef{{name: "advanceClock", handle: s.advanceClock, adminOnly: true}}
}

// advanceClock moves the manual clock by a number of seconds (fractions
// allowed) so that applications can test expiry without waiting. It exists
// only under --clock=manual.
func (s *Server) advanceClock(ctx context.Context, req *Request) (bson.Raw, error) {
	clock, ok := s.clock.(*clock.Manual)
	if !ok || !s.cfg.ManualClock {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "advanceClock needs the server to run with --clock=manual; the clock is the system clock")
	}
	secs, err := command.Float64("advanceClock", "advanceClock", command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	for key := range command.Args(req.Body) {
		return nil, command.UnknownField("advanceClock", key)
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > 100*365*24*3600 {
		return nil, mongoerr.New(mongoerr.BadValue, "advanceClock takes a finite number of seconds within 100 years, got %v", secs)
	}
	now := clock.Advance(time.Duration(secs * float64(time.Second)))
	return command.OK(bson.E{Key: "now", Value: bson.NewDateTimeFromTime(now)})
}

// ttlMetrics is serverStatus.metrics.ttl.
func (s *Server) ttlMetrics() bson.D {
	m := s.eng.Reaper().Metrics()
	return bson.D{
		{Key: "passes", Value: m.Passes},
		{Key: "subPasses", Value: m.SubPasses},
		{Key: "deletedDocuments", Value: m.DeletedDocuments},
	}
}
