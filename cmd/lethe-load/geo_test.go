package main

import "testing"

// TestSmokeGeoNear runs the geo-near workload over a few thousand points.
func TestSmokeGeoNear(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	cfg := smokeConfig(t, "geo-near")
	cfg.geoDocs = 3000
	got := runSmoke(t, cfg)
	checkWorkloads(t, got, []string{"geo-near"})
}
