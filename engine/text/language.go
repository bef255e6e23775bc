package text

import (
	"strings"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/danish"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/finnish"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/hungarian"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/norwegian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/romanian"
	"github.com/blevesearch/snowballstem/russian"
	"github.com/blevesearch/snowballstem/spanish"
	"github.com/blevesearch/snowballstem/swedish"
	"github.com/blevesearch/snowballstem/turkish"

	"github.com/lethedb/lethe/mongoerr"
)

// Language is one language of text indexes version 3.
type Language struct {
	Name  string                       // the canonical name, "english"
	Code  string                       // the ISO 639 code MongoDB also accepts, "en"; "" for none
	stem  func(*snowballstem.Env) bool // Snowball's stemmer of the language
	stops map[string]bool
	// englishDelimiters keeps the apostrophe in words.
	englishDelimiters bool
	turkish           bool // dotted and dotless i fold apart
}

// languages are MongoDB's (src/mongo/db/fts/fts_language.cpp), each with
// the Snowball stemmer MongoDB uses for it (libstemmer's).
var languages = []*Language{
	{Name: "none"},
	{Name: "danish", Code: "da", stem: danish.Stem},
	{Name: "dutch", Code: "nl", stem: dutch.Stem},
	{Name: "english", Code: "en", stem: english.Stem, englishDelimiters: true},
	{Name: "finnish", Code: "fi", stem: finnish.Stem},
	{Name: "french", Code: "fr", stem: french.Stem},
	{Name: "german", Code: "de", stem: german.Stem},
	{Name: "hungarian", Code: "hu", stem: hungarian.Stem},
	{Name: "italian", Code: "it", stem: italian.Stem},
	{Name: "norwegian", Code: "nb", stem: norwegian.Stem},
	{Name: "portuguese", Code: "pt", stem: portuguese.Stem},
	{Name: "romanian", Code: "ro", stem: romanian.Stem},
	{Name: "russian", Code: "ru", stem: russian.Stem},
	{Name: "spanish", Code: "es", stem: spanish.Stem},
	{Name: "swedish", Code: "sv", stem: swedish.Stem},
	{Name: "turkish", Code: "tr", stem: turkish.Stem, turkish: true},
}

func init() {
	for _, l := range languages {
		l.stops = stopWords(l.Name)
	}
}

// LookupLanguage finds a language by name or code, in any case, as
// MongoDB's language map does; nil when MongoDB has no such language.
func LookupLanguage(name string) *Language {
	for _, l := range languages {
		if strings.EqualFold(name, l.Name) || (l.Code != "" && strings.EqualFold(name, l.Code)) {
			return l
		}
	}
	return nil
}

// errUnsupportedLanguage is MongoDB's answer to a language it does not
// know, in a query's $language.
func errUnsupportedLanguage(name string) error {
	return mongoerr.New(mongoerr.BadValue, "unsupported language: \"%s\" for text index version 3", name)
}

// Stems reports whether the language's words are stemmed here.
func (l *Language) Stems() bool { return l.stem != nil }

// stemWord stems a word (lower cased, or in its case for case-sensitive
// tokens). The stemmers work on lower case; a word with capitals keeps
// them where the stem keeps its letters.
func (l *Language) stemWord(w string) string {
	if l.stem == nil {
		return w
	}
	env := snowballstem.NewEnv(w)
	l.stem(env)
	s := env.Current()
	if s == w || strings.ToLower(w) == w {
		return s
	}
	// Restore the case of the letters the stem kept of the word.
	orig, out := []rune(w), []rune(s)
	for i := range out {
		if i < len(orig) && foldRune(orig[i], l.turkish) == out[i] {
			out[i] = orig[i]
		}
	}
	return string(out)
}
