package text

import (
	"hash/maphash"
	"sort"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// Query is the argument of $text, as given.
type Query struct {
	Search             string
	Language           string // "" for the index's default language
	CaseSensitive      bool
	DiacriticSensitive bool
}

// ParseQuery parses the argument of $text with the codes of MongoDB's
// parser (src/mongo/db/matcher/expression_parser.cpp parseText).
func ParseQuery(arg bsoncore.Value) (*Query, error) {
	doc, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$text expects an object")
	}
	q := &Query{}
	found := false
	it := bsonvalue.ElementsOf(doc)
	for {
		name, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(name) {
		case "$search":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "$search requires a string value")
			}
			q.Search, found = s, true
		case "$language":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "$language requires a string value")
			}
			// Its value is checked by Bind: MongoDB parses the search
			// string in the language only once it has found the text
			// index, so without one that is the error.
			q.Language = s
		case "$caseSensitive":
			if v.Type != bsoncore.TypeBoolean {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "$caseSensitive requires a boolean value")
			}
			q.CaseSensitive = v.Boolean()
		case "$diacriticSensitive":
			if v.Type != bsoncore.TypeBoolean {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "$diacriticSensitive requires a boolean value")
			}
			q.DiacriticSensitive = v.Boolean()
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "extra fields in $text")
		}
	}
	if !found {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$search requires a string value")
	}
	return q, nil
}

// Bound is a $text query bound to a collection's text index: its terms,
// negations and phrases, and the matcher and scorer of documents.
type Bound struct {
	spec  *Spec
	q     *Query
	lang  *Language
	terms []string // the index terms: sorted, unique, never empty strings
	// positive and negated are the terms matched against a document's
	// tokens made with the query's sensitivity.
	positive, negated map[string]bool
	phrases, negPhr   []string

	termSet map[string]bool

	// scores remembers the scores of the documents matched, by a hash of
	// their bytes, for the sorts and projections that ask again: the last
	// few, or, for a sort by score, up to keptScores.
	mu     sync.Mutex
	seed   maphash.Seed
	scores map[uint64]float64
	keep   bool
}

// Bounds of the scores a Bound remembers: a query that projects its score
// asks right after the match, so a few suffice, forgotten together; a sort
// by score asks of every document it holds, which its memory limit bounds
// already, so a million (some 40 MiB), then no more.
const (
	recentScores = 1 << 10
	keptScores   = 1 << 20
)

// KeepScores has b remember the score of every document it matches, for a
// sort by score.
func (b *Bound) KeepScores() { b.keep = true }

// Bind parses the $search string as MongoDB's FTSQueryImpl::parse does:
// words and quoted phrases, a '-' right before a word or phrase (after
// white space) negating it until the next white space, the words of
// positive phrases also terms; then tokenizes the terms in the query's
// language.
func (q *Query) Bind(spec *Spec) (*Bound, error) {
	b := &Bound{spec: spec, q: q, lang: spec.Default, positive: map[string]bool{}, negated: map[string]bool{}, seed: maphash.MakeSeed(), scores: map[uint64]float64{}}
	if q.Language != "" {
		if b.lang = LookupLanguage(q.Language); b.lang == nil {
			return nil, errUnsupportedLanguage(q.Language)
		}
	}
	var pos, neg strings.Builder
	inNeg, inPhrase := false, false
	quote := 0
	s := q.Search
	isSpace := func(c byte) bool { return c == ' ' || c == '\n' || c == '\v' || c == '\f' || c == '\r' }
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	prevSpace := true
	for i < len(s) {
		start := i
		c := s[i]
		i++
		text := c != '-' && c != '"'
		if text {
			for i < len(s) && !isSpace(s[i]) && s[i] != '-' && s[i] != '"' {
				i++
			}
		}
		tok := s[start:i]
		before := prevSpace
		j := i
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		prevSpace = i > j
		switch {
		case text:
			if inPhrase && inNeg {
				continue
			}
			if inNeg && before {
				inNeg = false
			}
			if inNeg {
				neg.WriteString(tok)
				neg.WriteByte(' ')
			} else {
				pos.WriteString(tok)
				pos.WriteByte(' ')
			}
		case c == '-':
			if !inPhrase && before {
				inNeg = true
			}
		case c == '"':
			if inPhrase {
				phrase := s[quote+1 : start]
				if inNeg {
					b.negPhr = append(b.negPhr, phrase)
				} else {
					b.phrases = append(b.phrases, phrase)
				}
				inPhrase = false
			} else {
				inPhrase = true
				if inNeg && before {
					inNeg = false
				}
				quote = start
			}
		}
	}
	bounds := map[string]bool{}
	sensitive := TokenOptions{CaseSensitive: q.CaseSensitive, DiacriticSensitive: q.DiacriticSensitive}
	spec.tokens(b.lang, pos.String(), TokenOptions{}, func(t string) { bounds[t] = true })
	spec.tokens(b.lang, pos.String(), sensitive, func(t string) { b.positive[t] = true })
	spec.tokens(b.lang, neg.String(), sensitive, func(t string) { b.negated[t] = true })
	for t := range bounds {
		b.terms = append(b.terms, t)
	}
	sort.Strings(b.terms)
	b.termSet = bounds
	return b, nil
}

// Terms are the index terms a document must have one of.
func (b *Bound) Terms() []string { return b.terms }

// Info describes the parsed query as explain shows it.
func (b *Bound) Info() (terms, negated, phrases, negatedPhrases []string) {
	for t := range b.positive {
		terms = append(terms, t)
	}
	for t := range b.negated {
		negated = append(negated, t)
	}
	sort.Strings(terms)
	sort.Strings(negated)
	return terms, negated, append([]string{}, b.phrases...), append([]string{}, b.negPhr...)
}

// score is the sum of the document's scores of the query's terms, and
// whether it has any of them.
func (b *Bound) score(doc []byte) (float64, bool) {
	terms, err := b.spec.Terms(bsoncore.Document(doc))
	if err != nil {
		return 0, false // a document the index could not hold has no entries
	}
	score, found := 0.0, false
	for t, s := range terms {
		if b.termSet[t] {
			score += s
			found = true
		}
	}
	return score, found
}

func (b *Bound) remember(doc []byte, score float64) {
	h := maphash.Bytes(b.seed, doc)
	b.mu.Lock()
	switch {
	case !b.keep && len(b.scores) >= recentScores:
		clear(b.scores)
		b.scores[h] = score
	case len(b.scores) < keptScores:
		b.scores[h] = score
	}
	b.mu.Unlock()
}

// Score is doc's text score: the sum of its scores of the query's terms.
func (b *Bound) Score(doc []byte) float64 {
	h := maphash.Bytes(b.seed, doc)
	b.mu.Lock()
	s, ok := b.scores[h]
	b.mu.Unlock()
	if ok {
		return s
	}
	// A document that did not match, or reshaped by a stage: computed
	// each time, so that the remembered ones are the matched ones.
	s, _ = b.score(doc)
	return s
}

// Scorer is the text score of the documents a plan of b returns: every
// one has its score, except, for a $text under an $or (partial), those
// the other clauses found that b does not match, which have none
// (MongoDB's OR stage adds no score to them).
func (b *Bound) Scorer(partial bool) Scorer {
	if !partial {
		return func(doc []byte) (float64, bool) { return b.Score(doc), true }
	}
	return func(doc []byte) (float64, bool) {
		if !b.Match(doc) {
			return 0, false
		}
		return b.Score(doc), true
	}
}

// Match reports whether doc matches: it holds one of the query's terms
// (in its index entries, and with the query's case and diacritics when it
// asks for them), none of its negated terms, all of its phrases and none
// of its negated phrases (fts_matcher.cpp).
func (b *Bound) Match(doc []byte) bool {
	// Only matched documents are remembered: a cursor checks again the
	// documents it sorted, which matched already.
	h := maphash.Bytes(b.seed, doc)
	b.mu.Lock()
	_, ok := b.scores[h]
	b.mu.Unlock()
	if ok {
		return true
	}
	s, found := b.score(doc)
	if !found {
		return false
	}
	d := bsoncore.Document(doc)
	opts := TokenOptions{KeepStopWords: true, CaseSensitive: b.q.CaseSensitive, DiacriticSensitive: b.q.DiacriticSensitive}
	if b.q.CaseSensitive || b.q.DiacriticSensitive {
		if !b.anyToken(d, opts, b.positive) {
			return false
		}
	}
	if len(b.negated) > 0 && b.anyToken(d, opts, b.negated) {
		return false
	}
	for _, p := range b.phrases {
		if !b.phraseIn(d, p) {
			return false
		}
	}
	for _, p := range b.negPhr {
		if b.phraseIn(d, p) {
			return false
		}
	}
	b.remember(doc, s)
	return true
}

func (b *Bound) anyToken(doc bsoncore.Document, opts TokenOptions, set map[string]bool) bool {
	found := false
	_ = b.spec.values(doc, func(v value) {
		if found {
			return
		}
		b.spec.tokens(v.lang, v.text, opts, func(t string) {
			if set[t] {
				found = true
			}
		})
	})
	return found
}

func (b *Bound) phraseIn(doc bsoncore.Document, phrase string) bool {
	found := false
	_ = b.spec.values(doc, func(v value) {
		if found {
			return
		}
		found = b.spec.phraseMatch(v.lang, v.text, phrase, b.q.CaseSensitive, b.q.DiacriticSensitive)
	})
	return found
}
