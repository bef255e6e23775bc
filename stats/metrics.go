package stats

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Connections is what the collectors read of the server's listener.
type Connections interface {
	// Open is the number of client connections open now.
	Open() int
	// Accepted is the number of client connections accepted.
	Accepted() int64
}

// Collectors returns Prometheus collectors for the counters and for conns,
// for the registry that --metrics-listen serves.
func (c *Counters) Collectors(conns Connections) []prometheus.Collector {
	counter := func(name, help string, load func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "lethe", Name: name, Help: help},
			func() float64 { return float64(load()) })
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "lethe", Name: "connections_open", Help: "Client connections open now."},
			func() float64 { return float64(conns.Open()) }),
		counter("connections_accepted_total", "Client connections accepted.", conns.Accepted),
		counter("network_bytes_in_total", "Bytes of requests received, as sent (compressed or not).", c.Traffic.BytesIn.Load),
		counter("network_bytes_out_total", "Bytes of replies sent, as sent (compressed or not).", c.Traffic.BytesOut.Load),
		&opsCollector{counters: c, desc: prometheus.NewDesc("lethe_commands_total",
			"Commands run, by the kind serverStatus.opcounters counts them under.", []string{"kind"}, nil)},
	}
}

// opsCollector exports the opcounters as one counter with a kind label.
type opsCollector struct {
	counters *Counters
	desc     *prometheus.Desc
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.counters.Opcounters() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(e.Value.(int64)), e.Key)
	}
}
