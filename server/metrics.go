package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collectors returns Prometheus collectors for the server's counters, for
// the registry that --metrics-listen serves.
func (s *Server) Collectors() []prometheus.Collector {
	counter := func(name, help string, load func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "lethe", Name: name, Help: help},
			func() float64 { return float64(load()) })
	}
	collectors := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "lethe", Name: "connections_open", Help: "Client connections open now."},
			func() float64 { return float64(s.openConns()) }),
		counter("connections_accepted_total", "Client connections accepted.", func() int64 { return s.listener().Accepted() }),
		counter("network_bytes_in_total", "Bytes of requests received, as sent (compressed or not).", s.stats.traffic.BytesIn.Load),
		counter("network_bytes_out_total", "Bytes of replies sent, as sent (compressed or not).", s.stats.traffic.BytesOut.Load),
		&opsCollector{ops: &s.stats.ops, desc: prometheus.NewDesc("lethe_commands_total",
			"Commands run, by the kind serverStatus.opcounters counts them under.", []string{"kind"}, nil)},
	}
	return append(collectors, s.eng.Reaper().Collectors()...)
}

// opsCollector exports the opcounters as one counter with a kind label.
type opsCollector struct {
	ops  *opcounters
	desc *prometheus.Desc
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.ops.doc() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(e.Value.(int64)), e.Key)
	}
}
