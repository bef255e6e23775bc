package values

import "time"

// DateAdd adds n units to t as $dateAdd does in UTC: months, quarters and
// years keep the day of the month, or the last one of a shorter month.
func DateAdd(t time.Time, unit string, n int64) time.Time {
	switch unit {
	case "millisecond":
		return t.Add(time.Duration(n) * time.Millisecond)
	case "second":
		return t.Add(time.Duration(n) * time.Second)
	case "minute":
		return t.Add(time.Duration(n) * time.Minute)
	case "hour":
		return t.Add(time.Duration(n) * time.Hour)
	case "day":
		return t.AddDate(0, 0, int(n))
	case "week":
		return t.AddDate(0, 0, 7*int(n))
	}
	months := int(n)
	switch unit {
	case "quarter":
		months *= 3
	case "year":
		months *= 12
	}
	y, m, d := t.Date()
	first := time.Date(y, m+time.Month(months), 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	return first.AddDate(0, 0, min(d, last)-1)
}
