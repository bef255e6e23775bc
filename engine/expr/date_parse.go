package expr

import (
	"strings"
	"time"

	"github.com/lethedb/lethe/mongoerr"
)

// unset marks a date field a string did not give.
const unset = -1 << 31

// dateFields are what $dateFromString read of a date string.
type dateFields struct {
	year, month, day, hour, minute, second int
	micros                                 int64
	yearDay                                int // %j
	isoYear, isoWeek, isoDayOfWeek         int // %G, %V, %u
	offset                                 int // seconds east of UTC, if hasOffset
	hasOffset                              bool
}

func newDateFields() dateFields {
	return dateFields{year: unset, month: unset, day: unset, hour: unset, minute: unset, second: unset,
		micros: unset, yearDay: unset, isoYear: unset, isoWeek: unset, isoDayOfWeek: unset}
}

func parseError(s, why string) error {
	if why != "" {
		why = "; " + why
	}
	return mongoerr.New(mongoerr.ConversionFailure, "Error parsing date string '%s'%s", s, why)
}

// dateScanner reads a date string from left to right.
type dateScanner struct {
	s string
	i int
}

func (p *dateScanner) done() bool { return p.i == len(p.s) }

// digits reads from one to most decimal digits.
func (p *dateScanner) digits(most int) (n, count int, ok bool) {
	for count < most && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		n = n*10 + int(p.s[p.i]-'0')
		p.i++
		count++
	}
	return n, count, count > 0
}

func (p *dateScanner) accept(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// fraction reads the digits of a fraction of a second as microseconds.
func (p *dateScanner) fraction() (int64, bool) {
	var us int64
	count := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		if count < 6 {
			us = us*10 + int64(p.s[p.i]-'0')
		}
		p.i++
		count++
	}
	for n := count; n < 6; n++ {
		us *= 10
	}
	return us, count > 0
}

// offset reads a UTC offset: "Z", "UTC", "GMT", ±HH, ±HHMM or ±HH:MM.
func (p *dateScanner) offset() (int, bool) {
	for _, name := range []string{"Z", "UTC", "GMT"} {
		if strings.HasPrefix(p.s[p.i:], name) {
			p.i += len(name)
			return 0, true
		}
	}
	sign := 1
	switch {
	case p.accept('-'):
		sign = -1
	case p.accept('+'):
	default:
		return 0, false
	}
	h, n, ok := p.digits(4)
	if !ok {
		return 0, false
	}
	m := 0
	switch {
	case n > 2:
		h, m = h/100, h%100
	case p.accept(':'):
		if m, _, ok = p.digits(2); !ok {
			return 0, false
		}
	}
	return sign * (h*3600 + m*60), true
}

// parseFreeDate reads a date string given without a format, in the forms
// timelib reads that are common: an ISO 8601 date ("2017-02-08", also with
// slashes), an American one ("02/08/2017"), or one with the month's name
// ("Feb 8, 2017", "8 February 2017"); then optionally a time ("T12:10",
// "12:10:40.787", after a T or a space) and an offset ("Z", "+05:30",
// "-0400", "UTC").
func parseFreeDate(s string) (dateFields, error) {
	f := newDateFields()
	trimmed := strings.TrimSpace(s)
	var p *dateScanner
	for _, date := range []func(*dateScanner, *dateFields) bool{isoDate8601, americanDate, textualDate} {
		p = &dateScanner{s: trimmed}
		if date(p, &f) {
			break
		}
		p = nil
	}
	if p == nil {
		return f, parseError(s, "")
	}
	timeNext := p.accept('T')
	for p.accept(' ') {
	}
	if timeNext || p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		if !p.clock(&f) {
			return f, parseError(s, "")
		}
	}
	for p.accept(' ') {
	}
	if !p.done() {
		var ok bool
		if f.offset, ok = p.offset(); !ok || !p.done() {
			return f, parseError(s, "")
		}
		f.hasOffset = true
	}
	return f, nil
}

// isoDate8601 reads "2017-02-08" or "2017/02/08".
func isoDate8601(p *dateScanner, f *dateFields) bool {
	var n int
	var ok bool
	if f.year, n, ok = p.digits(4); !ok || n != 4 {
		return false
	}
	sep := byte('-')
	if !p.accept(sep) {
		if sep = '/'; !p.accept(sep) {
			return false
		}
	}
	if f.month, _, ok = p.digits(2); !ok || !p.accept(sep) {
		return false
	}
	f.day, _, ok = p.digits(2)
	return ok
}

// americanDate reads "2/8/2017", month first.
func americanDate(p *dateScanner, f *dateFields) bool {
	var n int
	var ok bool
	if f.month, _, ok = p.digits(2); !ok || !p.accept('/') {
		return false
	}
	if f.day, _, ok = p.digits(2); !ok || !p.accept('/') {
		return false
	}
	f.year, n, ok = p.digits(4)
	return ok && n == 4
}

// textualDate reads "Feb 8, 2017", "February 8 2017" or "8 Feb 2017".
func textualDate(p *dateScanner, f *dateFields) bool {
	var ok bool
	if f.day, _, ok = p.digits(2); ok {
		p.accept(' ') // or "8-Feb-2017"
		p.accept('-')
		if f.month, ok = p.anyMonthName(); !ok {
			return false
		}
		p.accept('.')
		if !p.accept(' ') && !p.accept('-') {
			return false
		}
	} else {
		if f.month, ok = p.anyMonthName(); !ok {
			return false
		}
		p.accept('.')
		if !p.accept(' ') {
			return false
		}
		if f.day, _, ok = p.digits(2); !ok {
			return false
		}
		p.accept(',')
		if !p.accept(' ') {
			return false
		}
	}
	var n int
	f.year, n, ok = p.digits(4)
	return ok && n == 4
}

// anyMonthName reads a month's name, whole or its first three letters.
func (p *dateScanner) anyMonthName() (int, bool) {
	if m, ok := p.monthName(true); ok {
		return m, true
	}
	return p.monthName(false)
}

// clock reads "12:10", "12:10:40" or "12:10:40.787"; seconds default to 0.
func (p *dateScanner) clock(f *dateFields) bool {
	var ok bool
	if f.hour, _, ok = p.digits(2); !ok || !p.accept(':') {
		return false
	}
	if f.minute, _, ok = p.digits(2); !ok {
		return false
	}
	f.second = 0
	if !p.accept(':') {
		return true
	}
	if f.second, _, ok = p.digits(2); !ok {
		return false
	}
	if p.accept('.') {
		f.micros, ok = p.fraction()
	}
	return ok
}

// parseWithFormat reads a date string by a checked format. Characters other
// than specifiers must appear as they are.
func parseWithFormat(s, format string) (dateFields, error) {
	f := newDateFields()
	p := &dateScanner{s: s}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			if !p.accept(c) {
				return f, parseError(s, "the separation symbol could not be found")
			}
			continue
		}
		i++
		var ok bool
		switch spec := format[i]; spec {
		case '%':
			ok = p.accept('%')
		case 'Y':
			f.year, _, ok = p.digits(4)
		case 'G':
			f.isoYear, _, ok = p.digits(4)
		case 'm':
			f.month, _, ok = p.digits(2)
		case 'd':
			f.day, _, ok = p.digits(2)
		case 'H':
			f.hour, _, ok = p.digits(2)
		case 'M':
			f.minute, _, ok = p.digits(2)
		case 'S':
			f.second, _, ok = p.digits(2)
		case 'j':
			f.yearDay, _, ok = p.digits(3)
		case 'V':
			f.isoWeek, _, ok = p.digits(2)
		case 'u':
			f.isoDayOfWeek, _, ok = p.digits(1)
		case 'L':
			var ms, n int
			if ms, n, ok = p.digits(3); ok {
				for ; n < 3; n++ {
					ms *= 10
				}
				f.micros = int64(ms) * 1000
			}
		case 'b', 'B':
			f.month, ok = p.monthName(spec == 'B')
		case 'z':
			f.offset, ok = p.offset()
			f.hasOffset = true
		case 'Z':
			sign := 1
			if p.accept('-') {
				sign = -1
			} else {
				p.accept('+')
			}
			var minutes int
			if minutes, _, ok = p.digits(4); ok {
				f.offset, f.hasOffset = sign*minutes*60, true
			}
		}
		if !ok {
			return f, parseError(s, "a value for %"+string(format[i])+" could not be found")
		}
	}
	if !p.done() {
		return f, parseError(s, "trailing data")
	}
	// A string with any part of a time has the rest of it zero.
	if f.hour != unset || f.minute != unset || f.second != unset || f.micros != unset {
		for _, part := range []*int{&f.hour, &f.minute, &f.second} {
			if *part == unset {
				*part = 0
			}
		}
	}
	return f, nil
}

// monthName reads a month's English name, or its first three letters, in
// any case.
func (p *dateScanner) monthName(full bool) (int, bool) {
	rest := strings.ToLower(p.s[p.i:])
	for i, name := range monthNames {
		if !full {
			name = name[:3]
		}
		if strings.HasPrefix(rest, strings.ToLower(name)) {
			p.i += len(name)
			return i + 1, true
		}
	}
	return 0, false
}

// instant is the date the fields name, in z unless the string gave its own
// offset.
func (f dateFields) instant(s string, z zone) (int64, error) {
	if f.isoYear != unset || f.isoWeek != unset || f.isoDayOfWeek != unset {
		if f.isoYear == unset || f.isoWeek == unset || f.isoDayOfWeek == unset {
			return 0, incompleteDate(s)
		}
		t := isoDate(f.isoYear, f.isoWeek, f.isoDayOfWeek)
		f.year, f.month, f.day = t.Year(), int(t.Month()), t.Day()
	}
	if f.yearDay != unset && f.year != unset {
		t := time.Date(f.year, 1, f.yearDay, 0, 0, 0, 0, time.UTC)
		f.month, f.day = int(t.Month()), t.Day()
	}
	if f.hour == unset && f.minute == unset && f.second == unset {
		f.hour, f.minute, f.second, f.micros = 0, 0, 0, 0
	}
	for _, part := range []int{f.year, f.month, f.day, f.hour, f.minute, f.second} {
		if part == unset {
			return 0, incompleteDate(s)
		}
	}
	if f.micros == unset {
		f.micros = 0
	}
	if f.month < 1 || f.month > 12 || f.day < 1 || f.day > daysIn(f.year, f.month) {
		return 0, parseError(s, "The parsed date was invalid")
	}
	if f.hour > 23 || f.minute > 59 || f.second > 59 {
		return 0, parseError(s, "The parsed time was invalid")
	}
	loc := z.loc
	if f.hasOffset {
		if !z.utc {
			return 0, mongoerr.New(mongoerr.ConversionFailure, "you cannot pass in a date/time string with GMT offset together with a timezone argument")
		}
		loc = time.FixedZone("", f.offset)
	}
	wall := time.Date(f.year, time.Month(f.month), f.day, f.hour, f.minute, f.second, 0, time.UTC).Unix()
	return wallToUnix(wall, loc)*1000 + f.micros/1000, nil
}

func incompleteDate(s string) error {
	return mongoerr.New(mongoerr.ConversionFailure, "an incomplete date/time string has been found, with elements missing: \"%s\"", s)
}

// daysIn is the number of days of a month of the proleptic Gregorian
// calendar.
func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// isoDate is the day of an ISO 8601 week date, at midnight UTC: weeks and
// days past their range carry into the next ones.
func isoDate(year, week, day int) time.Time {
	jan4 := time.Date(year, 1, 4, 0, 0, 0, 0, time.UTC)
	return jan4.AddDate(0, 0, -(isoDayOfWeek(jan4)-1)+(week-1)*7+(day-1))
}
