package text

import (
	"embed"
	"strings"
)

// stopWordFiles are MongoDB's stop word lists (stopwords/README.md).
//
//go:embed stopwords/*.txt
var stopWordFiles embed.FS

// stopWords reads a language's list; nil when MongoDB has none for it.
func stopWords(lang string) map[string]bool {
	data, err := stopWordFiles.ReadFile("stopwords/" + lang + ".txt")
	if err != nil {
		return nil
	}
	words := map[string]bool{}
	for _, w := range strings.Split(string(data), "\n") {
		if w = strings.TrimSpace(w); w != "" {
			words[w] = true
		}
	}
	return words
}

// IsStopWord reports whether w, lower cased, is one of the language's stop
// words.
func (l *Language) IsStopWord(w string) bool { return l.stops[w] }
