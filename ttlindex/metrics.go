package ttlindex

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the reaper's counters since it was created (rule 22).
type Metrics struct {
	// Passes counts wake-ups, whether or not they found work, and calls
	// of Pass.
	Passes int64
	// SubPasses counts batches asked of the store.
	SubPasses int64
	// DeletedDocuments counts the documents the store reported deleted.
	DeletedDocuments int64
}

// Metrics returns the current counters.
func (r *Reaper) Metrics() Metrics {
	return Metrics{
		Passes:           r.passes.Load(),
		SubPasses:        r.subPasses.Load(),
		DeletedDocuments: r.deleted.Load(),
	}
}

// Collectors exports the counters as Prometheus metrics, for the server to
// register.
func (r *Reaper) Collectors() []prometheus.Collector {
	counter := func(name, help string, value func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(value()) })
	}
	return []prometheus.Collector{
		counter("lethe_ttl_passes_total",
			"Passes of the TTL reaper, whether or not they found expired documents.",
			r.passes.Load),
		counter("lethe_ttl_subpasses_total",
			"Batches the TTL reaper ran.",
			r.subPasses.Load),
		counter("lethe_ttl_deleted_documents_total",
			"Expired documents the TTL reaper deleted.",
			r.deleted.Load),
	}
}
