// Package validation compiles and explains a collection's schema
// validation. A collection's validator is a query filter that every
// document written must match. validationLevel says which writes are
// checked (strict: all; moderate: inserts, and updates of documents that
// matched before; off: none), validationAction what a failure does (error:
// refuse the write with DocumentValidationFailure; warn: log and write).
//
// The engine keeps the validator with a collection's state, applies it in
// its writer and reports failures with Details; this package holds what is
// a pure function of the options and the document.
package validation
