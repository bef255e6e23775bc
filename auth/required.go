package auth

import (
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ErrUnknownCommand is Required's answer for a command it has no rule for:
// the server refuses such a command rather than run it unchecked.
var ErrUnknownCommand = errors.New("auth: no privilege rule for command")

// Required returns the privileges a client needs to run command cmd
// against database db with the command document body, following the
// checks MongoDB 7 makes. nil means the command needs none (the handshake,
// authentication, sessions, and commands whose handlers check ownership,
// such as getMore and killCursors, or filter their answer by what the
// client may see, such as listDatabases). A command without a rule gives
// an error wrapping ErrUnknownCommand.
//
// Some commands have another way in that a list of privileges cannot
// express: Authorize applies those (renameCollection within a database,
// listCollections of the collections one may see, rolesInfo of one's own
// roles), and OwnUserException those about the client's own user.
func Required(cmd string, db string, body bson.Raw) ([]Privilege, error) {
	if noPrivilege[cmd] {
		return nil, nil
	}
	if cmd == "explain" {
		inner, ok := body.Lookup("explain").DocumentOK()
		if !ok {
			return nil, fmt.Errorf("auth: explain needs a command document")
		}
		first, err := inner.IndexErr(0)
		if err != nil {
			return nil, fmt.Errorf("auth: explain of an empty document")
		}
		if first.Key() == "explain" {
			return nil, fmt.Errorf("auth: explain of explain")
		}
		return Required(first.Key(), db, inner)
	}
	if a, ok := clusterCommands[cmd]; ok {
		return []Privilege{onCluster([]Action{a})}, nil
	}
	if cmd == "dataSize" || cmd == "datasize" {
		// dataSize names a full namespace, "db.collection", which may be
		// of another database than the one the command is sent to
		// (mongod checks find on that namespace).
		ns, err := collectionArg(cmd, body)
		if err != nil {
			return nil, err
		}
		nsDB, coll, _ := strings.Cut(ns, ".")
		return []Privilege{onColl(nsDB, coll, []Action{"find"})}, nil
	}
	if a, ok := collectionCommands[cmd]; ok {
		coll, err := collectionArg(cmd, body)
		if err != nil {
			return nil, err
		}
		return []Privilege{onColl(db, coll, []Action{a})}, nil
	}
	if a, ok := databaseCommands[cmd]; ok {
		return []Privilege{onDB(db, []Action{a})}, nil
	}
	if rule, ok := ruleFor(cmd); ok {
		privs, err := rule(db, body)
		if err != nil {
			return nil, err
		}
		return mergePrivileges(privs), nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownCommand, cmd)
}

// noPrivilege lists the commands anyone may run, authenticated or not for
// the handshake and authentication ones (the server decides which of these
// an unauthenticated client may run).
var noPrivilege = map[string]bool{
	// Handshake, authentication and the connection's own state.
	"hello": true, "isMaster": true, "ismaster": true, "ping": true,
	"buildInfo": true, "buildinfo": true, "saslStart": true, "saslContinue": true,
	"authenticate": true, "logout": true, "getnonce": true,
	"connectionStatus": true, "whatsmyuri": true, "listCommands": true,
	"getLastError": true, "resetError": true, "features": true,
	// Sessions and transactions: the server checks that a session belongs
	// to the client.
	"startSession": true, "endSessions": true, "refreshSessions": true,
	"killSessions": true, "commitTransaction": true, "abortTransaction": true,
	// Cursors: the server checks that a cursor belongs to the client.
	"getMore": true, "killCursors": true,
	// listDatabases: any authenticated client may run it; the server lists
	// every database when Allows(cluster, listDatabases) and otherwise only
	// those the client has privileges in (Grants.AnyInDB).
	"listDatabases": true,
}

// clusterCommands need one action on the cluster resource.
var clusterCommands = map[string]Action{
	"serverStatus":                   "serverStatus",
	"hostInfo":                       "hostInfo",
	"shutdown":                       "shutdown",
	"fsync":                          "fsync",
	"fsyncUnlock":                    "unlock",
	"setParameter":                   "setParameter",
	"getParameter":                   "getParameter",
	"getCmdLineOpts":                 "getCmdLineOpts",
	"getLog":                         "getLog",
	"logRotate":                      "logRotate",
	"rotateCertificates":             "rotateCertificates",
	"killOp":                         "killop",
	"top":                            "top",
	"lockInfo":                       "serverStatus",
	"connPoolStats":                  "connPoolStats",
	"dropConnections":                "dropConnections",
	"replSetGetStatus":               "replSetGetStatus",
	"replSetGetConfig":               "replSetGetConfig",
	"replSetInitiate":                "replSetConfigure",
	"replSetReconfig":                "replSetConfigure",
	"replSetStepDown":                "replSetStateChange",
	"replSetFreeze":                  "replSetStateChange",
	"replSetMaintenance":             "replSetStateChange",
	"replSetResizeOplog":             "replSetResizeOplog",
	"appendOplogNote":                "appendOplogNote",
	"getDefaultRWConcern":            "getDefaultRWConcern",
	"setDefaultRWConcern":            "setDefaultRWConcern",
	"setFeatureCompatibilityVersion": "setFeatureCompatibilityVersion",
	"getClusterParameter":            "getClusterParameter",
	"setClusterParameter":            "setClusterParameter",
	"invalidateUserCache":            "invalidateUserCache",
	"killAllSessions":                "killAnySession",
	"killAllSessionsByPattern":       "killAnySession",
	"getFreeMonitoringStatus":        "checkFreeMonitoringStatus",
	"setFreeMonitoring":              "setFreeMonitoring",
	"applyOps":                       "applyOps",
	// Lethe's own: see LetheInternal.
	"configureFailPoint": LetheInternal,
	"advanceClock":       LetheInternal,
}

// collectionCommands need one action on the collection the command names.
var collectionCommands = map[string]Action{
	"find":                  "find",
	"count":                 "find",
	"distinct":              "find",
	"listIndexes":           "listIndexes",
	"delete":                "remove",
	"drop":                  "dropCollection",
	"createIndexes":         "createIndex",
	"dropIndexes":           "dropIndex",
	"deleteIndexes":         "dropIndex",
	"collStats":             "collStats",
	"validate":              "validate",
	"compact":               "compact",
	"reIndex":               "reIndex",
	"planCacheClear":        "planCacheWrite",
	"planCacheListFilters":  "planCacheIndexFilter",
	"planCacheSetFilter":    "planCacheIndexFilter",
	"planCacheClearFilters": "planCacheIndexFilter",
}

// databaseCommands need one action on the database.
var databaseCommands = map[string]Action{
	"dropDatabase":             "dropDatabase",
	"dbStats":                  "dbStats",
	"dbstats":                  "dbStats", // mongod's alias
	"dbHash":                   "dbHash",
	"profile":                  "enableProfiler",
	"listCollections":          "listCollections",
	"dropUser":                 "dropUser",
	"dropAllUsersFromDatabase": "dropUser",
	"dropRole":                 "dropRole",
	"dropAllRolesFromDatabase": "dropRole",
}

// collectionArg is the collection a command names as its first value.
func collectionArg(cmd string, body bson.Raw) (string, error) {
	coll, ok := body.Lookup(cmd).StringValueOK()
	if !ok || coll == "" {
		return "", fmt.Errorf("auth: %s needs a collection name", cmd)
	}
	return coll, nil
}

// trueValue is MongoDB's truthiness of an optional field: present and not
// false, zero or null.
func trueValue(v bson.RawValue) bool {
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		return false
	case bson.TypeBoolean:
		return v.Boolean()
	case bson.TypeInt32:
		return v.Int32() != 0
	case bson.TypeInt64:
		return v.Int64() != 0
	case bson.TypeDouble:
		return v.Double() != 0
	}
	return true
}
