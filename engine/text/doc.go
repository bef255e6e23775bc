// Package text is MongoDB's text search, apart from storage: the languages
// a text index knows (their names and ISO codes), the tokenizer of
// textIndexVersion 3 with its case folding and diacritic removal, stop
// words, Snowball stemming, the terms and scores a document gives a text
// index, and the $text query with its matcher.
//
// It follows MongoDB's src/mongo/db/fts: a document's strings are split on
// Unicode delimiters (white space, dashes, hyphens, quotation marks,
// terminal punctuation and pattern syntax; the apostrophe is part of a
// word in English), lower cased by simple case folding, stop words are
// dropped, the rest stemmed and stripped of diacritics. Each field scores
// its terms by frequency and field length, times its weight
// (FTSSpec::scoreDocument). A query's score for a document is the sum of
// the document's scores of the query's terms.
//
// Stemming uses github.com/kljensen/snowball, a Go implementation of the
// Snowball algorithms MongoDB runs through libstemmer. It has English,
// French, Hungarian, Norwegian, Russian, Spanish and Swedish; for MongoDB's
// other languages (Danish, Dutch, Finnish, German, Italian, Portuguese,
// Romanian, Turkish) the package does not stem, so that the text indexes
// MongoDB accepts are accepted and find words exactly as written, while
// their inflected forms do not match each other as in MongoDB.
//
// The package knows nothing of the engine: it works on BSON documents and
// strings, and the engine keeps the index entries.
package text
