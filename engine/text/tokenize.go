package text

import (
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
