package server

import (
	"runtime"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// catalogStats is serverStatus' catalogStats section: the collections and
// views of the catalog, those of the admin, config and local databases and
// system.* collections counted apart as internal, as mongod counts them
// (src/mongo/db/catalog/collection_catalog.cpp, CollectionCatalog::Stats;
// docs/reference/command/serverStatus, catalogStats). Lethe has no capped,
// clustered or time series collections.
func (s *Server) catalogStats() bson.D {
	var collections, internal, views, internalViews int32
	for _, db := range s.eng.Databases() {
		internalDB := db == "admin" || db == "config" || db == "local"
		for _, name := range s.eng.CollectionNames(db) {
			if internalDB || strings.HasPrefix(name, "system.") {
				internal++
			} else {
				collections++
			}
		}
		n := int32(len(s.eng.Views(db)))
		if internalDB {
			internalViews += n
		} else {
			views += n
		}
	}
	return bson.D{
		{Key: "collections", Value: collections},
		{Key: "capped", Value: int32(0)},
		{Key: "clustered", Value: int32(0)},
		{Key: "timeseries", Value: int32(0)},
		{Key: "views", Value: views},
		{Key: "internalCollections", Value: internal},
		{Key: "internalViews", Value: internalViews},
	}
}

// buildEnvironment is buildInfo's description of how the binary was built,
// with mongod's field names; tools print it and some read target_os and
// target_arch. Lethe is built by the Go toolchain, named where mongod names
// its C++ compiler.
func buildEnvironment() bson.D {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i386"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	return bson.D{
		{Key: "distmod", Value: ""},
		{Key: "distarch", Value: arch},
		{Key: "cc", Value: runtime.Version()},
		{Key: "ccflags", Value: ""},
		{Key: "cxx", Value: runtime.Version()},
		{Key: "cxxflags", Value: ""},
		{Key: "linkflags", Value: ""},
		{Key: "target_arch", Value: arch},
		{Key: "target_os", Value: strings.ToLower(runtime.GOOS)},
		{Key: "cppdefines", Value: ""},
	}
}
