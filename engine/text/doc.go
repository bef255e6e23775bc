// Package text is MongoDB's text search, apart from storage: the languages
// a text index knows (their names and ISO codes), the tokenizer of
// textIndexVersion 3 with its case folding and diacritic removal, and the
// basic tokenizer of version 2 (ASCII delimiters and lower case, diacritics
// kept), stop words, Snowball stemming, the terms and scores a document
// gives a text index, and the $text query with its matcher.
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
// Stemming uses github.com/blevesearch/snowballstem: the Go output of the
// Snowball compiler, from the same algorithms as the C of libstemmer,
// which MongoDB links, for all fifteen of MongoDB's languages.
//
// The package knows nothing of the engine: it works on BSON documents and
// strings, and the engine keeps the index entries.
package text
