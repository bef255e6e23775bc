package geo

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// GeoNearStage is the argument of a $geoNear aggregation stage
// (https://www.mongodb.com/docs/manual/reference/operator/aggregation/geoNear/).
type GeoNearStage struct {
	Near *Near
	// DistanceField and IncludeLocs are the output fields of the distance
	// and of the location it was measured to (IncludeLocs may be empty).
	DistanceField, IncludeLocs string
	// Key is the path of the geo index to use, empty to pick the only one.
	Key string
	// Query filters the documents, as a $match would.
	Query []byte
	// Multiplier scales the distances reported.
	Multiplier float64
}

// ParseGeoNearStage parses the argument of $geoNear with MongoDB's codes.
func ParseGeoNearStage(arg bsoncore.Value) (*GeoNearStage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$geoNear must take a nested object but found: %s", describe(arg))
	}
	s := &GeoNearStage{Multiplier: 1}
	var near bsoncore.Value
	spherical := false
	minDist, maxDist := 0.0, math.Inf(1)
	elems, err := bsoncore.Document(arg.Data).Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$geoNear: %v", err)
	}
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "near":
			if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(16605, "$geoNear requires a 'near' option as an Array")
			}
			near = v
		case "distanceField":
			if v.Type != bsoncore.TypeString {
				return nil, mongoerr.New(16606, "$geoNear requires a 'distanceField' option as a String")
			}
			s.DistanceField = v.StringValue()
		case "includeLocs":
			if v.Type != bsoncore.TypeString {
				return nil, mongoerr.New(16607, "$geoNear requires that 'includeLocs' option is a String")
			}
			s.IncludeLocs = v.StringValue()
		case "key":
			if v.Type != bsoncore.TypeString {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "$geoNear parameter 'key' must be of type string but found type: %s", typeName(v))
			}
			if v.StringValue() == "" {
				return nil, mongoerr.New(mongoerr.BadValue, "$geoNear parameter 'key' cannot be the empty string")
			}
			s.Key = v.StringValue()
		case "query":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "query must be an object")
			}
			s.Query = v.Data
		case "spherical":
			spherical = truthy(v)
		case "distanceMultiplier", "minDistance", "maxDistance":
			x, ok := number(v)
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "%s must be a number", el.Key())
			}
			if x < 0 || math.IsNaN(x) {
				return nil, mongoerr.New(mongoerr.BadValue, "%s must be nonnegative", el.Key())
			}
			switch el.Key() {
			case "distanceMultiplier":
				s.Multiplier = x
			case "minDistance":
				minDist = x
			default:
				maxDist = x
			}
		case "collation":
			return nil, mongoerr.New(40227, "$geoNear does not accept the 'collation' parameter. Instead, specify a collation for the entire aggregation command.")
		case "uniqueDocs":
			// deprecated and ignored, as MongoDB does
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unknown argument to $geoNear: %s", el.Key())
		}
	}
	if near.Type == 0 {
		return nil, mongoerr.New(16605, "$geoNear requires a 'near' option as an Array")
	}
	if s.DistanceField == "" {
		return nil, mongoerr.New(16606, "$geoNear requires a 'distanceField' option as a String")
	}
	if s.Near, err = NewNear(near, spherical, minDist, maxDist); err != nil {
		return nil, err
	}
	return s, nil
}

func typeName(v bsoncore.Value) string { return v.Type.String() }

func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeNull, bsoncore.TypeUndefined, 0:
		return false
	}
	if x, ok := number(v); ok {
		return x != 0
	}
	return true
}
