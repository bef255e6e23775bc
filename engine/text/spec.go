package text

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// Kind is the key pattern value of a text field.
const Kind = "text"

// Wildcard is the field name that indexes every string of a document.
const Wildcard = "$**"

// KeyField and ScoreField are the fields that stand for the text part of a
// text index's stored key pattern, as MongoDB lists it: {_fts: "text",
// _ftsx: 1}, between the fields before and after it.
const (
	KeyField   = "_fts"
	ScoreField = "_ftsx"
)

// maxWordWeight bounds a field's weight (fts_spec.cpp MAX_WORD_WEIGHT).
const maxWordWeight = 100000

// The textIndexVersions Lethe builds: MongoDB's default, 3, whose
// unicode tokenizer folds case and removes diacritics, and 2, whose basic
// tokenizer splits on ASCII delimiters and lower cases ASCII letters only
// (fts_basic_tokenizer.cpp). MongoDB also builds version 1, which Lethe
// does not.
const (
	Version  = 3
	Version2 = 2
)

// Spec is a text index: the weight of each field, whether every string is
// indexed, its languages, and the plain fields before and after the text.
type Spec struct {
	weights  map[string]float64
	names    []string // the weighted fields, sorted as MongoDB's map
	wildcard bool
	Default  *Language
	Override string // the field of a document that names its language
	Before   []string
	After    []string
	// Version is the textIndexVersion, Version or Version2.
	Version int32
	stems   *stemCache
}

// IsTextKey reports whether a key pattern has a text field, in either the
// form given to createIndexes or the stored one.
func IsTextKey(key bson.Raw) bool {
	elems, _ := key.Elements()
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && s == Kind {
			return true
		}
	}
	return false
}

func cannotCreate(format string, args ...any) error {
	return mongoerr.New(mongoerr.CannotCreateIndex, format, args...)
}

// Normalize checks a text index's key pattern and options as MongoDB's
// FTSSpec::fixSpec does and returns the stored key pattern ({_fts: "text",
// _ftsx: 1} for the text fields, the others around it) and the options
// listIndexes shows: weights, default_language, language_override and
// textIndexVersion.
func Normalize(key bson.Raw, weightsOpt, langOpt, overrideOpt, versionOpt bson.RawValue) (stored bson.Raw, opts bson.D, err error) {
	elems, err := key.Elements()
	if err != nil {
		return nil, nil, cannotCreate("invalid key pattern: %v", err)
	}
	weights := map[string]int32{}
	var kp bson.D
	added, stage := false, 0 // stage: 0 before the text fields, 1 in them, 2 after
	fixed := false           // the key is in the stored form, {_fts: "text", _ftsx: 1}
	for i, el := range elems {
		name, v := el.Key(), el.Value()
		// The stored form, {_fts: "text", _ftsx: 1}, as listIndexes shows
		// it, creates the index again (mongorestore, $out), its fields
		// named by weights: FTSSpec::fixSpec (src/mongo/db/fts/fts_spec.cpp)
		// takes both as they are.
		if name == KeyField {
			if s, _ := v.StringValueOK(); s != Kind {
				return nil, nil, cannotCreate("expecting _fts:\"text\"")
			}
			if i+1 == len(elems) || elems[i+1].Key() != ScoreField {
				return nil, nil, cannotCreate("expected _ftsx after _fts")
			}
			if n, ok := elems[i+1].Value().AsInt64OK(); !ok || n != 1 {
				return nil, nil, cannotCreate("expecting _ftsx:1")
			}
			if added {
				return nil, nil, cannotCreate("text index with reserved fields _fts/_ftsx not allowed")
			}
			if stage == 2 {
				return nil, nil, cannotCreate("'text' fields in index must all be adjacent")
			}
			stage, added, fixed = 1, true, true
			kp = append(kp, bson.E{Key: KeyField, Value: Kind}, bson.E{Key: ScoreField, Value: int32(1)})
			continue
		}
		if name == ScoreField {
			if i > 0 && elems[i-1].Key() == KeyField {
				continue // taken with _fts
			}
			return nil, nil, cannotCreate("text index with reserved fields _fts/_ftsx not allowed")
		}
		if s, ok := v.StringValueOK(); ok {
			if fixed {
				// The stored form's fields are named by weights only.
				return nil, nil, cannotCreate("'text' fields in index must all be adjacent")
			}
			if s != Kind {
				return nil, nil, cannotCreate("Can't use more than one index plugin for a single index.")
			}
			if stage == 2 {
				return nil, nil, cannotCreate("'text' fields in index must all be adjacent")
			}
			stage = 1
			weights[name] = 1
			if !added {
				kp = append(kp, bson.E{Key: KeyField, Value: Kind}, bson.E{Key: ScoreField, Value: int32(1)})
				added = true
			}
			continue
		}
		if stage == 1 {
			stage = 2
		}
		n, ok := v.AsInt64OK()
		if f, isF := v.AsFloat64OK(); isF && !ok {
			n, ok = int64(f), true
		}
		if !ok || (n != 1 && n != -1) {
			return nil, nil, cannotCreate("expected value 1 or -1 for non-text key in compound index")
		}
		kp = append(kp, bson.E{Key: name, Value: v})
	}
	if stage == 0 {
		return nil, nil, cannotCreate("expected additional fields in text index key pattern")
	}
	switch {
	case weightsOpt.Type == bson.TypeEmbeddedDocument:
		ws, _ := weightsOpt.Document().Elements()
		for _, w := range ws {
			f, ok := w.Value().AsFloat64OK()
			if !ok {
				return nil, nil, cannotCreate("weight for text index needs numeric type")
			}
			weights[w.Key()] = int32(f)
		}
	case weightsOpt.Type == bson.TypeString && weightsOpt.StringValue() == Wildcard:
		weights[Wildcard] = 1
	case weightsOpt.Type != 0:
		return nil, nil, cannotCreate("text index option 'weights' must be an object")
	}
	if len(weights) == 0 {
		// The stored form names its fields by weights alone.
		return nil, nil, cannotCreate("text index option 'weights' must specify fields or the wildcard")
	}
	names := make([]string, 0, len(weights))
	for n := range weights {
		names = append(names, n)
	}
	sort.Strings(names)
	var wd bson.D
	for _, n := range names {
		w := weights[n]
		if w <= 0 || w >= maxWordWeight {
			return nil, nil, cannotCreate("text index weight must be in the exclusive interval (0,%d) but found: %d", maxWordWeight, w)
		}
		if n != Wildcard {
			for _, part := range strings.Split(n, ".") {
				if part == "" {
					return nil, nil, cannotCreate("weight cannot have empty path component")
				}
				if strings.HasPrefix(part, "$") {
					return nil, nil, cannotCreate("weight cannot have path component with $ prefix")
				}
			}
		}
		wd = append(wd, bson.E{Key: n, Value: w})
	}
	lang := "english"
	switch langOpt.Type {
	case 0:
	case bson.TypeString:
		lang = langOpt.StringValue()
	default:
		return nil, nil, cannotCreate("default_language needs a string type")
	}
	if LookupLanguage(lang) == nil {
		return nil, nil, cannotCreate("default_language is not valid")
	}
	override := "language"
	switch overrideOpt.Type {
	case 0:
	case bson.TypeString:
		override = overrideOpt.StringValue()
		if override == "" || override[0] == '$' || strings.Contains(override, ".") {
			return nil, nil, cannotCreate("language_override is not valid")
		}
	default:
		return nil, nil, cannotCreate("language_override must be a string")
	}
	version := int32(Version)
	if versionOpt.Type != 0 {
		f, ok := versionOpt.AsFloat64OK()
		if !ok {
			return nil, nil, cannotCreate("text index option 'textIndexVersion' must be a number")
		}
		// MongoDB builds version 1 too, with its own spec (_fixSpecV1),
		// languages and scores, which Lethe does not have.
		if version = int32(f); version != Version && version != Version2 {
			return nil, nil, cannotCreate("bad textIndexVersion: %d", version)
		}
	}
	stored, err = bson.Marshal(kp)
	if err != nil {
		return nil, nil, fmt.Errorf("text: key pattern: %w", err)
	}
	opts = bson.D{
		{Key: "weights", Value: wd},
		{Key: "default_language", Value: lang},
		{Key: "language_override", Value: override},
		{Key: "textIndexVersion", Value: version},
	}
	return stored, opts, nil
}

// NewSpec compiles a text index from its stored key pattern and its
// options (a document holding weights, default_language and
// language_override, as Normalize made them).
func NewSpec(key bson.Raw, opts bson.Raw) (*Spec, error) {
	s := &Spec{weights: map[string]float64{}, Default: LookupLanguage("english"), Override: "language", Version: Version, stems: &stemCache{}}
	if v, err := opts.LookupErr("textIndexVersion"); err == nil {
		if n, ok := v.AsInt64OK(); ok && n == Version2 {
			s.Version = Version2
		}
	}
	if v, err := opts.LookupErr("default_language"); err == nil {
		if l := LookupLanguage(v.StringValue()); l != nil {
			s.Default = l
		}
	}
	if v, err := opts.LookupErr("language_override"); err == nil {
		s.Override = v.StringValue()
	}
	if v, err := opts.LookupErr("weights"); err == nil {
		ws, _ := v.Document().Elements()
		for _, w := range ws {
			if w.Key() == Wildcard {
				s.wildcard = true
				continue
			}
			f, _ := w.Value().AsFloat64OK()
			s.weights[w.Key()] = f
			s.names = append(s.names, w.Key())
		}
	}
	sort.Strings(s.names)
	elems, err := key.Elements()
	if err != nil {
		return nil, fmt.Errorf("text: key pattern: %w", err)
	}
	passed := false
	for _, el := range elems {
		switch {
		case el.Key() == KeyField || el.Key() == ScoreField:
			passed = true
		case passed:
			s.After = append(s.After, el.Key())
		default:
			s.Before = append(s.Before, el.Key())
		}
	}
	return s, nil
}

// IsWildcard reports whether every string of a document is indexed.
func (s *Spec) IsWildcard() bool { return s.wildcard }

// value is one string a text index reads of a document, with its
// language and weight.
type value struct {
	text   string
	lang   *Language
	weight float64
}

// languageOf is the language a document (or embedded document) names in
// the override field, or lang; MongoDB's codes for a bad one
// (FTSSpec::_getLanguageToUseV2).
func (s *Spec) languageOf(obj bsoncore.Document, lang *Language) (*Language, error) {
	v, err := obj.LookupErr(s.Override)
	if err != nil {
		return lang, nil
	}
	name, ok := v.StringValueOK()
	if !ok {
		return nil, mongoerr.New(17261, "found language override field in document with non-string type")
	}
	l := LookupLanguage(name)
	if l == nil {
		return nil, mongoerr.New(17262, "language override unsupported: %s", name)
	}
	return l, nil
}

// lowerBound is the first weighted field at or after name, as the weights'
// sorted map finds it; ok is false past the end.
func (s *Spec) lowerBound(name string) (string, float64, bool) {
	i := sort.SearchStrings(s.names, name)
	if i == len(s.names) {
		return "", 0, false
	}
	return s.names[i], s.weights[s.names[i]], true
}

// values walks the strings of doc the index reads, as MongoDB's
// FTSElementIterator does: a weighted path, or every string for the
// wildcard, through embedded documents and one level of arrays, each
// embedded document possibly naming its own language. A string weighs
// what its path's weight says, 1 when none names it.
func (s *Spec) values(doc bsoncore.Document, fn func(value)) error {
	lang, err := s.languageOf(doc, s.Default)
	if err != nil {
		return err
	}
	return s.walk(doc, lang, "", false, fn)
}

func (s *Spec) walk(obj bsoncore.Document, lang *Language, parent string, isArray bool, fn func(value)) error {
	elems, err := obj.Elements()
	if err != nil {
		return err
	}
	for _, el := range elems {
		name := el.Key()
		if s.wildcard && name == s.Override {
			continue
		}
		dotted := name
		switch {
		case parent == "":
		case isArray:
			dotted = parent
		default:
			dotted = parent + "." + name
		}
		v := el.Value()
		lb := dotted
		if v.Type == bsoncore.TypeEmbeddedDocument {
			lb = dotted + "."
		}
		key, weight, possible := s.lowerBound(lb)
		if !s.wildcard && (!possible || (key != dotted && !strings.HasPrefix(key, dotted+"."))) {
			continue
		}
		exact := possible && key == dotted
		if !exact {
			// Fields the weights do not name weigh 1 (the manual's text
			// index weights), also under the wildcard.
			weight = 1
		}
		switch v.Type {
		case bsoncore.TypeString:
			if exact || s.wildcard {
				fn(value{text: v.StringValue(), lang: lang, weight: weight})
			}
		case bsoncore.TypeEmbeddedDocument:
			if !exact || s.wildcard {
				sub := v.Document()
				l, err := s.languageOf(sub, lang)
				if err != nil {
					return err
				}
				if err := s.walk(sub, l, dotted, false, fn); err != nil {
					return err
				}
			}
		case bsoncore.TypeArray:
			if !isArray || s.wildcard {
				arr := bsoncore.Document(v.Array())
				l, err := s.languageOf(arr, lang)
				if err != nil {
					return err
				}
				if err := s.walk(arr, l, dotted, true, fn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Terms returns the terms of doc with their scores, as the index keeps
// them (FTSSpec::scoreDocument, _scoreStringV2): in each string, a term
// seen count times scores weight * freq * coeff, where freq sums 1/2^k for
// its k-th occurrence, coeff is 0.5 + 0.5 * count / tokens, and a string
// that is the term alone (in any case) scores 1.1 times; the scores of a
// term add up over the strings.
func (s *Spec) Terms(doc bsoncore.Document) (map[string]float64, error) {
	scores := map[string]float64{}
	err := s.values(doc, func(v value) {
		s.scoreString(v, scores)
	})
	return scores, err
}

type termCount struct {
	count int
	exp   float64
	freq  float64
}

func (s *Spec) scoreString(v value, scores map[string]float64) {
	terms := map[string]*termCount{}
	var order []string
	tokens := 0
	s.tokens(v.lang, v.text, TokenOptions{}, func(t string) {
		tc := terms[t]
		if tc == nil {
			tc = &termCount{}
			terms[t] = tc
			order = append(order, t)
		}
		if tc.exp == 0 {
			tc.exp = 1
		} else {
			tc.exp *= 2
		}
		tc.count++
		tc.freq += 1 / tc.exp
		tokens++
	})
	for _, t := range order {
		tc := terms[t]
		coeff := 0.5*float64(tc.count)/float64(tokens) + 0.5
		adjustment := 1.0
		if len(v.text) == len(t) && strings.EqualFold(v.text, t) {
			adjustment += 0.1
		}
		scores[t] += v.weight * tc.freq * coeff * adjustment
	}
}

// Long terms are kept in index keys as MongoDB keeps them
// (fts_index_format.cpp, versions 2 and 3): a term longer than 64 bytes
// is its first 32 bytes and the hex MD5 of the whole, so that one huge
// word makes no huge key.
const (
	termKeyPrefixLength = 32
	termKeyLength       = 64
)

// KeyTerm is the form of a term in an index key.
func KeyTerm(term string) string {
	if len(term) <= termKeyLength {
		return term
	}
	sum := md5.Sum([]byte(term))
	return term[:termKeyPrefixLength] + hex.EncodeToString(sum[:])
}
