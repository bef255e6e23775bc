// Package geo is the geometry of MongoDB's geospatial queries and indexes,
// built on S2 (github.com/golang/geo), the library MongoDB's 2dsphere index
// uses. It knows nothing of the engine: it parses and validates GeoJSON and
// legacy coordinate pairs from raw BSON values, with MongoDB's error codes
// and messages; decides the predicates of $geoWithin and $geoIntersects;
// measures the distances of $near, $nearSphere and $geoNear (meters on a
// sphere of MongoDB's earth radius for GeoJSON, radians for legacy pairs on
// the sphere, plane units for 2d); and makes index keys and the key ranges
// of a query: S2 cell ids for 2dsphere (version 3, MongoDB's covering
// parameters) and interleaved-bit hashes of the plane for 2d.
//
// A Geometry is what a document's geo field or a query's $geometry holds,
// reduced to parts: points, polylines and polygons, each on the sphere, and
// for legacy pairs the flat point too. Predicates and distances take
// Geometries and query regions (Region) and decide part by part.
//
// Costs: S2 checks and indexes a shape in about n log n of its n vertices;
// a GeoJSON object may have at most MaxVertices positions, so that no
// request holds the server for long or grows its heap much.
package geo
