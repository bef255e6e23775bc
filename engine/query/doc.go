// Package query compiles MongoDB query filters and sort specifications and
// evaluates them against raw BSON documents.
//
// A Filter is compiled once from the filter document of a find, update or
// delete and then matched against many documents. Matching reads the stored
// bytes directly: documents are never decoded into maps. Values compare in
// MongoDB's BSON order as defined by package keycodec, with the query
// language's own rules on top: comparisons only match values of the same type
// class, null also matches missing fields, and a path that runs into an array
// tests the array's elements as well as the array itself.
//
// $expr hands its argument to package expr, the aggregation expression
// language; a document matches when the expression is truthy. An
// expression that fails on a document, as adding a string does, fails the
// command in MongoDB: MatchErr and MatchPositional return that error, while
// Match, for uses that have no command to fail, treats it as no match.
//
// The geospatial operators ($geoWithin, $geoIntersects, $near,
// $nearSphere) parse their shapes with package geo and test the shape a
// field holds; a filter's $near (Filter.Near) is for the engine to read
// nearest first through a geo index, the matcher only checks its bounds.
//
// The paths of the language are walked as the matcher walks them
// (WalkPath); the distinct command walks them its own way, by which
// DistinctValues collects what it reports.
package query
