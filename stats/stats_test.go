package stats

import "testing"

// Every command counts once, under its kind or under command.
func TestCountByKind(t *testing.T) {
	var c Counters
	for _, name := range []string{"insert", "find", "find", "update", "delete", "getMore", "aggregate", ""} {
		c.Count(name)
	}
	want := map[string]int64{"insert": 1, "query": 2, "update": 1, "delete": 1, "getmore": 1, "command": 2}
	for _, e := range c.Opcounters() {
		if got := e.Value.(int64); got != want[e.Key] {
			t.Errorf("%s = %d, want %d", e.Key, got, want[e.Key])
		}
	}
}
