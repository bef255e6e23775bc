package expiry

import (
	"context"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// Config is what the commands need of the server.
type Config struct {
	Engine *engine.Engine
	// ManualClock is the clock advanceClock moves; nil when the server runs
	// on the system clock (advanceClock then fails).
	ManualClock *clock.Manual
}

// Service answers the expiry commands and reports the reaper's counters.
type Service struct {
	eng   *engine.Engine
	clock *clock.Manual
}

// New returns the Service of cfg.Engine.
func New(cfg Config) *Service { return &Service{eng: cfg.Engine, clock: cfg.ManualClock} }

// Commands are advanceClock, for the server's registry.
func (s *Service) Commands() []command.Command {
	return []command.Command{{Name: "advanceClock", Handle: s.advanceClock, AdminOnly: true}}
}

// advanceClock moves the manual clock by a number of seconds (fractions
// allowed) so that applications can test expiry without waiting. It exists
// only under --clock=manual.
func (s *Service) advanceClock(ctx context.Context, req *command.Request) (bson.Raw, error) {
	if s.clock == nil {
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
	now := s.clock.Advance(time.Duration(secs * float64(time.Second)))
	return command.OK(bson.E{Key: "now", Value: bson.NewDateTimeFromTime(now)})
}

// Metrics is serverStatus.metrics.ttl: the reaper's passes and what they
// deleted. On a store shared by several servers, which divide the
// reaper's work between them, Lethe adds how many of the ranges of that
// work this server holds (ranges, leasedRanges): MongoDB has no such
// field, as its TTL monitor covers one node's data.
func (s *Service) Metrics() bson.D {
	m := s.eng.Reaper().Metrics()
	out := bson.D{
		{Key: "passes", Value: m.Passes},
		{Key: "subPasses", Value: m.SubPasses},
		{Key: "deletedDocuments", Value: m.DeletedDocuments},
	}
	if held, total, shared := s.eng.ReapRanges(); shared {
		out = append(out, bson.E{Key: "ranges", Value: int64(total)}, bson.E{Key: "leasedRanges", Value: int64(held)})
	}
	return out
}
