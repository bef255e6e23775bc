package text

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// foldRune is MongoDB's case folding of one code point
// (src/mongo/db/fts/unicode/gen_casefold_map.py): Unicode's common and
// simple foldings, one code point to one, so that a letter whose only
// folding is to several (ß, İ) stays as it is; in Turkish I folds to
// dotless ı and İ to i.
func foldRune(r rune, turkish bool) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			if turkish && r == 'I' {
				return 'ı'
			}
			return r + ('a' - 'A')
		}
		return r
	}
	if r == 'İ' {
		if turkish {
			return 'i'
		}
		return r
	}
	// A full folding to one code point is the simple one; where the full
	// one expands, the simple one, if any, is the lower case.
	f := cases.Fold().String(string(r))
	if fr, n := utf8.DecodeRuneInString(f); n == len(f) {
		return fr
	}
	return unicode.ToLower(r)
}

// foldString folds every code point of s.
func foldString(s string, turkish bool) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf || ('A' <= s[i] && s[i] <= 'Z') {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r, turkish))
	}
	return b.String()
}

// stripRune is MongoDB's diacritic removal of one code point
// (gen_diacritic_map.py): a diacritic goes (ok false); a letter whose
// decomposition less its diacritics recomposes to one code point becomes
// that code point.
func stripRune(r rune) (rune, bool) {
	if r < utf8.RuneSelf {
		if r == '^' || r == '`' {
			return 0, false // Diacritic code points of ASCII
		}
		return r, true
	}
	if unicode.Is(unicode.Diacritic, r) {
		return 0, false
	}
	d := norm.NFD.String(string(r))
	if len(d) == utf8.RuneLen(r) && d == string(r) {
		return r, true
	}
	var kept []rune
	for _, c := range d {
		if !unicode.Is(unicode.Diacritic, c) {
			kept = append(kept, c)
		}
	}
	c := norm.NFC.String(string(kept))
	if cr, n := utf8.DecodeRuneInString(c); n == len(c) && n > 0 {
		return cr, true
	}
	return r, true
}

// stripDiacritics removes the diacritics of s.
func stripDiacritics(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf || s[i] == '^' || s[i] == '`' {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if c, ok := stripRune(r); ok {
			b.WriteRune(c)
		}
	}
	return b.String()
}
