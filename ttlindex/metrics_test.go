package ttlindex

import (
	"testing"

	"github.com/lethedb/lethe/clock"
	"github.com/prometheus/client_golang/prometheus"
)

func TestCollectors(t *testing.T) {
	store := newFakeStore(times(5, t0)...)
	r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0), BatchSize: 2})
	if _, err := r.Pass(); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got[f.GetName()] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"lethe_ttl_passes_total":            1,
		"lethe_ttl_subpasses_total":         3,
		"lethe_ttl_deleted_documents_total": 5,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("gathered %v, want exactly %v", got, want)
	}
}
