package text

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// delimiterTables are the Unicode properties whose code points separate
// words (src/mongo/db/fts/unicode/gen_delimiter_list.py).
var delimiterTables = []*unicode.RangeTable{
	unicode.White_Space, unicode.Dash, unicode.Hyphen, unicode.Quotation_Mark,
	unicode.Terminal_Punctuation, unicode.Pattern_Syntax, unicode.Sentence_Terminal,
}

// asciiDelimiters caches the tables for ASCII.
var asciiDelimiters [utf8.RuneSelf]bool

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		asciiDelimiters[r] = unicode.IsOneOf(delimiterTables, r)
	}
}

// isDelimiter reports whether r separates words; in English the apostrophe
// does not.
func isDelimiter(r rune, english bool) bool {
	if r < utf8.RuneSelf {
		if r == '\'' && english {
			return false
		}
		return asciiDelimiters[r]
	}
	return unicode.IsOneOf(delimiterTables, r)
}

// TokenOptions choose how tokens are made.
type TokenOptions struct {
	KeepStopWords      bool // stop words are dropped unless set
	CaseSensitive      bool // tokens keep their case
	DiacriticSensitive bool // tokens keep their diacritics
}

// Tokens calls fn with each token of s in language l, made as MongoDB's
// unicode tokenizer makes them: the word lower cased, dropped if a stop
// word, the word (in its case when case-sensitive) stemmed, then stripped
// of diacritics unless diacritic-sensitive.
func (l *Language) Tokens(s string, opts TokenOptions, fn func(token string)) {
	l.tokens(s, opts, nil, fn)
}

func (l *Language) tokens(s string, opts TokenOptions, stems *stemCache, fn func(token string)) {
	english := l.englishDelimiters
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if isDelimiter(r, english) {
			i += n
			continue
		}
		start := i
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if isDelimiter(r, english) {
				break
			}
			i += n
		}
		word := s[start:i]
		lower := foldString(word, l.turkish)
		if !opts.KeepStopWords && l.stops[lower] {
			continue
		}
		if !opts.CaseSensitive {
			word = lower
		}
		word = stems.stem(l, word)
		if !opts.DiacriticSensitive {
			word = stripDiacritics(word)
		}
		fn(word)
	}
}

// tokens calls fn with each token of text in l as the index's version
// makes them.
func (s *Spec) tokens(l *Language, text string, opts TokenOptions, fn func(token string)) {
	if s.Version == Version2 {
		l.basicTokens(text, opts, s.stems, fn)
		return
	}
	l.tokens(text, opts, s.stems, fn)
}

// phraseMatch reports whether phrase is in text, as the index's version
// compares them: version 3 folds case and removes diacritics unless the
// query is sensitive to them; version 2 (BasicFTSPhraseMatcher) ignores
// the case of ASCII letters alone unless case-sensitive, and is always
// diacritic-sensitive.
func (s *Spec) phraseMatch(l *Language, text, phrase string, caseSensitive, diacriticSensitive bool) bool {
	if s.Version == Version2 {
		if !caseSensitive {
			text, phrase = asciiLower(text), asciiLower(phrase)
		}
		return strings.Contains(text, phrase)
	}
	return strings.Contains(l.fold(text, caseSensitive, diacriticSensitive), l.fold(phrase, caseSensitive, diacriticSensitive))
}

// basicTokens calls fn with each token of s in language l as MongoDB's
// basic tokenizer of textIndexVersion 2 makes them (fts_basic_tokenizer.cpp
// over tokenizer.cpp): words are the runs of bytes between ASCII white
// space and ASCII punctuation (the apostrophe is white space but in
// English), so every byte of a multi-byte code point is part of a word;
// the word is lower cased in ASCII alone, dropped if a stop word, and the
// word (in its case when case-sensitive) stemmed. Diacritics always stay:
// the tokenizer ignores DiacriticSensitive.
func (l *Language) basicTokens(s string, opts TokenOptions, stems *stemCache, fn func(token string)) {
	inWord := func(c byte) bool {
		if c == '\'' {
			return l.englishDelimiters
		}
		return c >= utf8.RuneSelf || !basicSeparators[c]
	}
	i := 0
	for i < len(s) {
		if !inWord(s[i]) {
			i++
			continue
		}
		start := i
		for i < len(s) && inWord(s[i]) {
			i++
		}
		word := s[start:i]
		lower := asciiLower(word)
		if !opts.KeepStopWords && l.stops[lower] {
			continue
		}
		if !opts.CaseSensitive {
			word = lower
		}
		fn(stems.stem(l, word))
	}
}

// basicSeparators are the ASCII bytes that end a word of the basic
// tokenizer: its white space and its delimiters (Tokenizer::_type).
var basicSeparators = func() (t [utf8.RuneSelf]bool) {
	for _, c := range []byte(" \f\v\t\r\n~`!@#$%^&*()-=+[]{}|\\;:\"<>,./?") {
		t[c] = true
	}
	return t
}()

// asciiLower lower cases the ASCII letters of s, as MongoDB's
// str::toLower does, leaving every other byte.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// fold prepares s for a phrase match: folded unless case-sensitive,
// stripped unless diacritic-sensitive.
func (l *Language) fold(s string, caseSensitive, diacriticSensitive bool) string {
	if !caseSensitive {
		s = foldString(s, l.turkish)
	}
	if !diacriticSensitive {
		s = stripDiacritics(s)
	}
	return s
}

// stemCache remembers stems: Snowball stemming is most of the cost of
// indexing a document, and prose repeats its words. It holds at most
// maxStems words; past that, words are stemmed each time.
type stemCache struct {
	mu sync.RWMutex
	m  map[*Language]map[string]string
	n  int
}

const maxStems = 1 << 16

// stem is l's stem of word, remembered in c (nil remembers nothing).
func (c *stemCache) stem(l *Language, word string) string {
	if c == nil || l.stem == nil {
		return l.stemWord(word)
	}
	c.mu.RLock()
	s, ok := c.m[l][word]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = l.stemWord(word)
	c.mu.Lock()
	if c.n < maxStems {
		if c.m == nil {
			c.m = map[*Language]map[string]string{}
		}
		if c.m[l] == nil {
			c.m[l] = map[string]string{}
		}
		c.m[l][word] = s
		c.n++
	}
	c.mu.Unlock()
	return s
}
