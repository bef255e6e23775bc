package auth

// MongoDB's built-in roles, from the manual's "Built-In Roles" reference
// and, for the exact action lists, the server's builtin_roles.yml. Grants
// on time-series bucket collections (system.buckets.*) are left out: Lethe
// has none.

// Action lists the roles share.
var (
	readActions = acts("changeStream", "collStats", "dbHash", "dbStats", "find",
		"killCursors", "listCollections", "listIndexes", "listSearchIndexes",
		"planCacheRead")

	readWriteActions = join(readActions, acts("cleanupStructuredEncryptionData",
		"compactStructuredEncryptionData", "convertToCapped", "createCollection",
		"createIndex", "createSearchIndexes", "dropCollection", "dropIndex",
		"dropSearchIndex", "insert", "remove", "renameCollectionSameDB", "update",
		"updateSearchIndex"))

	userAdminActions = acts("changeCustomData", "changePassword", "createUser",
		"createRole", "dropUser", "dropRole", "grantRole", "revokeRole",
		"setAuthenticationRestriction", "viewUser", "viewRole")

	dbAdminActions = acts("analyze", "bypassDocumentValidation", "collMod",
		"collStats", "compact", "convertToCapped", "createCollection", "dbStats",
		"dropCollection", "dropDatabase", "dropIndex", "dropSearchIndex",
		"createIndex", "createSearchIndexes", "enableProfiler", "listCollections",
		"listIndexes", "listSearchIndexes", "updateSearchIndex",
		"planCacheIndexFilter", "planCacheRead", "planCacheWrite", "reIndex",
		"renameCollectionSameDB", "storageDetails", "validate")

	dbAdminProfileActions = join(readActions,
		acts("convertToCapped", "createCollection", "dropCollection"))

	clusterMonitorClusterActions = acts("connPoolStats", "getCmdLineOpts",
		"getDefaultRWConcern", "getLog", "getParameter", "getShardMap", "hostInfo",
		"listDatabases", "listSampledQueries", "listSessions", "listShards", "netstat",
		"operationMetrics", "replSetGetConfig", "replSetGetStatus", "serverStatus",
		"top", "useUUID", "inprog", "shardingState", "allCollectionStats",
		"shardedDataDistribution",
		// Free monitoring's, still granted by MongoDB 7 (later removed).
		"checkFreeMonitoringStatus", "setFreeMonitoring")

	clusterMonitorDBActions = acts("collStats", "dbStats", "getDatabaseVersion",
		"getShardVersion", "indexStats")

	hostManagerClusterActions = acts("applicationMessage", "auditConfigure",
		"connPoolSync", "dropConnections", "logRotate", "oidReset", "setParameter",
		"shutdown", "touch", "unlock", "flushRouterConfig", "fsync",
		"invalidateUserCache", "killAnyCursor", "killAnySession", "killop",
		"replSetResizeOplog", "resync", "trafficRecord", "rotateCertificates",
		"oidcListKeys", "oidcRefreshKeys")

	clusterManagerClusterActions = acts("appendOplogNote", "applicationMessage",
		"replSetConfigure", "replSetGetConfig", "replSetGetStatus",
		"replSetStateChange", "resync", "addShard", "removeShard", "listSessions",
		"listShards", "flushRouterConfig", "cleanupOrphaned", "getDefaultRWConcern",
		"runTenantMigration", "setDefaultRWConcern", "setFeatureCompatibilityVersion",
		"setClusterParameter", "getClusterParameter", "setChangeStreamState",
		"getChangeStreamState", "querySettings", "queryStatsRead",
		"queryStatsReadTransformed", "checkMetadataConsistency",
		"transitionFromDedicatedConfigServer", "transitionToDedicatedConfigServer")

	clusterManagerDBActions = acts("analyzeShardKey", "configureQueryAnalyzer",
		"clearJumboFlag", "splitChunk", "moveChunk", "moveCollection",
		"enableSharding", "splitVector", "refineCollectionShardKey",
		"reshardCollection")

	writeActions = acts("insert", "update", "remove")

	restoreWriteActions = acts("bypassDocumentValidation", "collMod",
		"convertToCapped", "createCollection", "createIndex", "createSearchIndexes",
		"dropCollection", "insert", "updateSearchIndex")
)

// builtinRole is one built-in role. Its privileges are a function of the
// database the role is named in: read on "sales" reads sales.
type builtinRole struct {
	// adminOnly roles exist only in admin.
	adminOnly bool
	// roles are the roles it inherits; an empty DB is the role's own.
	roles      []RoleName
	privileges func(db string) []Privilege
}

var builtinRoles = map[string]builtinRole{
	"read": {privileges: func(db string) []Privilege {
		return []Privilege{onDB(db, readActions), onColl(db, "system.js", readActions)}
	}},
	"readWrite": {privileges: func(db string) []Privilege {
		return []Privilege{onDB(db, readWriteActions), onColl(db, "system.js", readWriteActions)}
	}},
	"userAdmin": {privileges: func(db string) []Privilege {
		return []Privilege{onDB(db, userAdminActions)}
	}},
	"dbAdmin": {privileges: func(db string) []Privilege {
		return []Privilege{
			onDB(db, join(dbAdminActions, acts("configureQueryAnalyzer"))),
			onColl(db, "system.profile", dbAdminProfileActions),
		}
	}},
	"dbOwner": {roles: []RoleName{{Role: "readWrite"}, {Role: "dbAdmin"}, {Role: "userAdmin"}}},

	"readAnyDatabase": {adminOnly: true, privileges: func(string) []Privilege {
		return []Privilege{
			onAnyNormal(readActions),
			onCluster(acts("listDatabases")),
			onCollAnyDB("system.js", readActions),
		}
	}},
	"readWriteAnyDatabase": {adminOnly: true, roles: []RoleName{{Role: "readAnyDatabase"}},
		privileges: func(string) []Privilege {
			return []Privilege{
				onAnyNormal(readWriteActions),
				onCollAnyDB("system.js", readWriteActions),
			}
		}},
	"userAdminAnyDatabase": {adminOnly: true, privileges: func(string) []Privilege {
		readAndIndex := join(readActions, acts("createIndex", "createSearchIndexes",
			"dropIndex", "dropSearchIndex"))
		return []Privilege{
			onAnyNormal(join(userAdminActions, acts("listCachedAndActiveUsers"))),
			onDB("local", userAdminActions),
			onDB("config", userAdminActions),
			onCluster(acts("listDatabases", "authSchemaUpgrade", "invalidateUserCache", "viewUser")),
			onColl("admin", "system.users", readAndIndex),
			onColl("admin", "system.roles", readAndIndex),
			onCollAnyDB("system.users", readActions),
			onColl("admin", "system.version", readActions),
			onColl("admin", "system.backup_users", readActions),
		}
	}},
	"dbAdminAnyDatabase": {adminOnly: true, privileges: func(string) []Privilege {
		return []Privilege{
			onCluster(acts("listDatabases", "applyOps")),
			onAnyNormal(join(dbAdminActions, acts("configureQueryAnalyzer"))),
			onCollAnyDB("system.profile", dbAdminProfileActions),
		}
	}},

	"clusterMonitor": {adminOnly: true,
		roles: []RoleName{{Role: "read", DB: "config"}, {Role: "read", DB: "local"}},
		privileges: func(string) []Privilege {
			return []Privilege{
				onCluster(clusterMonitorClusterActions),
				onAnyNormal(clusterMonitorDBActions),
				onDB("config", clusterMonitorDBActions),
				onColl("config", "system.sessions", clusterMonitorDBActions),
				onDB("local", clusterMonitorDBActions),
				onColl("local", "system.replset", acts("find")),
				onColl("local", "replset.election", acts("find")),
				onColl("local", "replset.minvalid", acts("find")),
				onCollAnyDB("system.profile", acts("find")),
			}
		}},
	"hostManager": {adminOnly: true, privileges: func(string) []Privilege {
		return []Privilege{
			onCluster(hostManagerClusterActions),
			onAnyNormal(acts("killCursors")),
		}
	}},
	"clusterManager": {adminOnly: true, roles: []RoleName{{Role: "read", DB: "config"}},
		privileges: func(string) []Privilege {
			return []Privilege{
				onCluster(clusterManagerClusterActions),
				onAnyNormal(clusterManagerDBActions),
				onDB("config", clusterManagerDBActions),
				onDB("local", clusterManagerDBActions),
				onColl("local", "system.replset", readActions),
				{Resource: Resource{AnyResource: true}, Actions: acts("dbCheck")},
				onColl("local", "system.healthlog", readActions),
				onDB("config", writeActions),
				onDB("local", writeActions),
				onColl("local", "replset.election", writeActions),
				onColl("local", "replset.minvalid", writeActions),
			}
		}},
	"clusterAdmin": {adminOnly: true,
		roles: []RoleName{{Role: "clusterMonitor"}, {Role: "hostManager"}, {Role: "clusterManager"}},
		privileges: func(string) []Privilege {
			return []Privilege{
				onAnyNormal(acts("dropDatabase")),
				{Resource: Resource{AnyResource: true}, Actions: acts("importCollection", "exportCollection")},
			}
		}},

	"__queryableBackup": {adminOnly: true, privileges: func(string) []Privilege {
		find := acts("find")
		return []Privilege{
			{Resource: Resource{AnyResource: true}, Actions: acts("collStats", "listCollections", "listIndexes", "listSearchIndexes")},
			onAnyNormal(find),
			onCluster(acts("getParameter", "listDatabases", "useUUID")),
			onDB("config", find),
			onDB("local", find),
			onColl("local", "replset.election", find),
			onColl("local", "replset.minvalid", find),
			onCollAnyDB("system.js", find),
			onCollAnyDB("system.users", find),
			onCollAnyDB("system.profile", find),
			onColl("admin", "system.backup_users", find),
			onColl("admin", "system.roles", find),
			onColl("admin", "system.version", find),
			onColl("config", "settings", find),
		}
	}},
	"backup": {adminOnly: true, roles: []RoleName{{Role: "__queryableBackup"}},
		privileges: func(string) []Privilege {
			return []Privilege{
				onCluster(acts("appendOplogNote", "serverStatus", "setUserWriteBlockMode")),
				onColl("config", "settings", acts("insert", "update")),
			}
		}},
	"restore": {adminOnly: true, privileges: func(string) []Privilege {
		return []Privilege{
			onCluster(acts("getParameter", "forceUUID", "useUUID", "bypassWriteBlockingMode",
				"setUserWriteBlockMode", "applyOps")),
			onDB("local", restoreWriteActions),
			onDB("config", restoreWriteActions),
			onColl("local", "system.replset", restoreWriteActions),
			onColl("local", "replset.election", restoreWriteActions),
			onColl("local", "replset.minvalid", restoreWriteActions),
			{Resource: Resource{AnyResource: true}, Actions: acts("listCollections")},
			onAnyNormal(join(restoreWriteActions, userAdminActions)),
			onCollAnyDB("system.js", restoreWriteActions),
			onColl("admin", "tempusers", acts("find")),
			onColl("admin", "temproles", acts("find")),
			onColl("admin", "system.backup_users", restoreWriteActions),
			onColl("admin", "system.version", join(restoreWriteActions, acts("find"))),
			onCollAnyDB("system.users", join(restoreWriteActions, acts("find", "update", "remove"))),
			onColl("admin", "system.roles", acts("createIndex")),
		}
	}},

	"root": {adminOnly: true,
		roles: []RoleName{{Role: "clusterAdmin"}, {Role: "userAdminAnyDatabase"},
			{Role: "dbAdminAnyDatabase"}, {Role: "readWriteAnyDatabase"}, {Role: "backup"},
			{Role: "restore"}, {Role: "directShardOperations"}},
		privileges: func(string) []Privilege {
			return []Privilege{
				{Resource: Resource{AnyResource: true}, Actions: acts("validate")},
				onCluster(acts("useTenant", string(LetheInternal))),
				onColl("config", "system.preimages", acts("find", "remove")),
				onColl("config", "system.change_collection", acts("find", "insert", "remove", "update")),
			}
		}},
	"directShardOperations": {adminOnly: true, privileges: func(string) []Privilege {
		return []Privilege{onCluster(acts("issueDirectShardOperations"))}
	}},
	// __system is the role of the cluster's own members: every action on
	// every resource.
	"__system": {adminOnly: true, privileges: func(string) []Privilege {
		return []Privilege{
			{Resource: Resource{AnyResource: true}, Actions: []Action{AnyAction}},
			onCluster([]Action{AnyAction}),
		}
	}},
}

func acts(names ...string) []Action {
	out := make([]Action, len(names))
	for i, n := range names {
		out[i] = Action(n)
	}
	return out
}

func join(lists ...[]Action) []Action {
	var out []Action
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func onDB(db string, a []Action) Privilege {
	return Privilege{Resource: Resource{DB: db}, Actions: a}
}

func onColl(db, coll string, a []Action) Privilege {
	return Privilege{Resource: Resource{DB: db, Collection: coll}, Actions: a}
}

func onCollAnyDB(coll string, a []Action) Privilege {
	return Privilege{Resource: Resource{Collection: coll}, Actions: a}
}

func onAnyNormal(a []Action) Privilege {
	return Privilege{Resource: Resource{}, Actions: a}
}

func onCluster(a []Action) Privilege {
	return Privilege{Resource: Resource{Cluster: true}, Actions: a}
}
