package apiversion

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// codeAPIParamsWithoutVersion is MongoDB's unnamed code for apiStrict or
// apiDeprecationErrors without apiVersion.
const codeAPIParamsWithoutVersion mongoerr.Code = 4886600

// apiV1Commands are the commands of Stable API version 1, by the names
// the registry knows them.
var apiV1Commands = map[string]bool{
	"abortTransaction": true, "aggregate": true, "authenticate": true, "collMod": true,
	"commitTransaction": true, "count": true, "create": true, "createIndexes": true,
	"delete": true, "drop": true, "dropDatabase": true, "dropIndexes": true,
	"endSessions": true, "explain": true, "find": true, "findAndModify": true,
	"getMore": true, "hello": true, "insert": true, "killCursors": true,
	"listCollections": true, "listDatabases": true, "listIndexes": true, "ping": true,
	"refreshSessions": true, "update": true, "saslStart": true, "saslContinue": true,
}

// notInAPIV1Stages are the aggregation stages Lethe has that are never in
// version 1 (AllowedWithApiStrict::kNeverInVersion1 in MongoDB's stage
// registrations).
var notInAPIV1Stages = map[string]bool{
	"$currentOp": true, "$indexStats": true, "$listLocalSessions": true, "$listSessions": true,
	"$planCacheStats": true, "$listCatalog": true, "$queryStats": true,
	"$search": true, "$searchMeta": true, "$vectorSearch": true, "$listSearchIndexes": true,
}

// Check validates a command's apiVersion, apiStrict and
// apiDeprecationErrors and, under apiStrict, refuses commands and
// aggregation stages outside version 1. cmd is the command's name as the
// server's registry knows it; body is the command document.
func Check(cmd string, body bson.Raw) error {
	var version string
	var haveVersion, haveOther, strict bool
	for key, v := range command.Fields(body) {
		switch string(key) {
		case "apiVersion":
			s, ok := v.StringValueOK()
			if !ok {
				return command.WrongType("APIParametersFromClient", "apiVersion", v.Type, "string")
			}
			version, haveVersion = s, true
		case "apiStrict":
			b, ok := v.BooleanOK()
			if !ok {
				return command.WrongType("APIParametersFromClient", "apiStrict", v.Type, "bool")
			}
			strict, haveOther = b, true
		case "apiDeprecationErrors":
			if _, ok := v.BooleanOK(); !ok {
				return command.WrongType("APIParametersFromClient", "apiDeprecationErrors", v.Type, "bool")
			}
			haveOther = true
		}
	}
	if haveOther && !haveVersion {
		return mongoerr.New(codeAPIParamsWithoutVersion, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
	}
	if haveVersion && version != "1" {
		return mongoerr.New(mongoerr.APIVersionError, "API version must be \"1\"")
	}
	if !strict {
		return nil
	}
	if !apiV1Commands[cmd] {
		return mongoerr.New(mongoerr.APIStrictError, "Provided apiStrict:true, but the command %s is not in API Version 1. "+
			"Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api.", cmd)
	}
	if cmd == "aggregate" {
		return checkAPIV1Pipeline(body)
	}
	return nil
}

// checkAPIV1Pipeline refuses the stages outside version 1 in an aggregate's
// pipeline.
func checkAPIV1Pipeline(body bson.Raw) error {
	arr, ok := body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil // the command's parser reports it
	}
	stages, err := arr.Values()
	if err != nil {
		return nil
	}
	for _, st := range stages {
		doc, ok := st.DocumentOK()
		if !ok {
			continue
		}
		elems, err := doc.Elements()
		if err != nil || len(elems) == 0 {
			continue
		}
		if name := elems[0].Key(); notInAPIV1Stages[name] {
			return mongoerr.New(mongoerr.APIStrictError, "%s is not allowed with 'apiStrict: true' in API Version 1", name)
		}
	}
	return nil
}
