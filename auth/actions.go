package auth

// AnyAction stands for every action, as in MongoDB: a privilege holding it
// allows whatever is asked on its resource. Only __system has it.
const AnyAction Action = "anyAction"

// LetheInternal is Lethe's own action for the commands that change how the
// server behaves for every client and exist for tests and operators only:
// configureFailPoint and the manual clock's advanceClock. MongoDB has no
// such commands and so no such action; it is granted on the cluster
// resource by root (and __system) alone, and may be granted in a
// user-defined role like any other action.
const LetheInternal Action = "letheInternal"

// IsAction reports whether name is one of MongoDB's privilege actions (or
// LetheInternal), spelled exactly; createRole and grantPrivilegesToRole
// refuse any other.
func IsAction(name string) bool {
	_, ok := knownActions[Action(name)]
	return ok
}

// knownActions is MongoDB 7's list of action types (action_type.idl),
// including those kept only for backward compatibility, and LetheInternal.
var knownActions = func() map[Action]struct{} {
	m := make(map[Action]struct{}, len(actionNames)+1)
	for _, a := range actionNames {
		m[Action(a)] = struct{}{}
	}
	m[LetheInternal] = struct{}{}
	return m
}()

var actionNames = []string{
	"addShard", "advanceClusterTime", "allCollectionStats", "analyze", "analyzeShardKey",
	"anyAction", "appendOplogNote", "applicationMessage", "applyOps", "auditConfigure",
	"auditLogRotate", "authCheck", "authenticate", "authSchemaUpgrade",
	"bypassDocumentValidation", "bypassWriteBlockingMode", "changeCustomData",
	"changeOwnCustomData", "changeOwnPassword", "changePassword", "changeStream",
	"checkFreeMonitoringStatus", "checkMetadataConsistency", "cleanupOrphaned",
	"cleanupStructuredEncryptionData", "clearJumboFlag", "closeAllDatabases", "collMod",
	"collStats", "compact", "compactStructuredEncryptionData", "configureQueryAnalyzer",
	"connPoolStats", "connPoolSync", "convertToCapped", "cpuProfiler", "createCollection",
	"createDatabase", "createIndex", "createRole", "createSearchIndexes", "createUser",
	"dbCheck", "dbHash", "dbStats", "dropAllRolesFromDatabase", "dropAllUsersFromDatabase",
	"dropCollection", "dropConnections", "dropDatabase", "dropIndex", "dropRole",
	"dropSearchIndex", "dropUser", "emptycapped", "enableProfiler", "enableSharding",
	"exportCollection", "find", "flushRouterConfig", "forceUUID", "fsync", "fsyncUnlock",
	"getChangeStreamState", "getClusterParameter", "getCmdLineOpts", "getDatabaseVersion",
	"getDefaultRWConcern", "getLog", "getParameter", "getShardMap", "getShardVersion",
	"grantPrivilegesToRole", "grantRole", "grantRolesToRole", "grantRolesToUser",
	"hostInfo", "impersonate", "importCollection", "indexStats", "inprog", "insert",
	"internal", "invalidateUserCache", "issueDirectShardOperations", "killAnyCursor",
	"killAnySession", "killCursors", "killop", "listCachedAndActiveUsers",
	"listCollections", "listCursors", "listDatabases", "listIndexes", "listSampledQueries",
	"listSearchIndexes", "listSessions", "listShards", "logRotate", "moveChunk",
	"moveCollection", "netstat", "oidcListKeys", "oidcRefreshKeys", "oidReset",
	"operationMetrics", "planCacheIndexFilter", "planCacheRead", "planCacheWrite",
	"querySettings", "queryStatsRead", "queryStatsReadTransformed",
	"refineCollectionShardKey", "reIndex", "remove", "removeShard", "renameCollection",
	"renameCollectionSameDB", "repairDatabase", "replSetConfigure", "replSetGetConfig",
	"replSetGetStatus", "replSetHeartbeat", "replSetReconfig", "replSetResizeOplog",
	"replSetStateChange", "reshardCollection", "resync", "revokePrivilegesFromRole",
	"revokeRole", "revokeRolesFromRole", "revokeRolesFromUser", "rotateCertificates",
	"runAsLessPrivilegedUser", "runTenantMigration", "serverStatus",
	"setAuthenticationRestriction", "setChangeStreamState", "setClusterParameter",
	"setDefaultRWConcern", "setFeatureCompatibilityVersion", "setFreeMonitoring",
	"setParameter", "setUserWriteBlockMode", "shardCollection", "shardedDataDistribution",
	"shardingState", "shutdown", "splitChunk", "splitVector", "storageDetails", "top",
	"touch", "trafficRecord", "transitionFromDedicatedConfigServer",
	"transitionToDedicatedConfigServer", "unlock", "update", "updateRole",
	"updateSearchIndex", "updateUser", "useTenant", "useUUID", "validate", "viewRole",
	"viewUser",
}
