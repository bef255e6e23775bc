package replset

import (
	"context"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// replTerm is the term of the set: the one election that made this server
// primary.
const replTerm = 1

// Set is the one-member replica set a server started with a set name
// presents: its name, its member's address, and the cluster time.
type Set struct {
	name string
	// times is the cluster time; wall the server's clock, for the dates
	// of replSetGetStatus.
	times ClusterClock
	wall  clock.Clock
	// me is the advertised host:port, set once by Advertise.
	me atomic.Pointer[string]
	// electionID is what hello reports: 0x7fffffff and the term, as a
	// MongoDB primary of protocol version 1 builds it.
	electionID bson.ObjectID
	// replicaSetID identifies this set's configuration; random per process,
	// as Lethe keeps no configuration document.
	replicaSetID bson.ObjectID
	started      time.Time
}

// New returns the set called name, whose cluster time is times and
// whose dates come from wall.
func New(name string, times ClusterClock, wall clock.Clock) *Set {
	rs := &Set{name: name, times: times, wall: wall, replicaSetID: bson.NewObjectID(), started: time.Now()}
	rs.electionID[0], rs.electionID[1], rs.electionID[2], rs.electionID[3] = 0x7f, 0xff, 0xff, 0xff
	rs.electionID[11] = replTerm
	return rs
}

// Name is the set's name (mongod's --replSet).
func (rs *Set) Name() string { return rs.name }

// host is the advertised address of the one member.
func (rs *Set) host() string {
	if p := rs.me.Load(); p != nil {
		return *p
	}
	return ""
}

// Advertise sets the address the set names its member by, the server's
// advertised host:port.
func (rs *Set) Advertise(addr string) { rs.me.Store(&addr) }

// AppendHello appends what a one-member set's primary adds to hello,
// in MongoDB's order, after topologyVersion; legacy spells isMaster's
// "ismaster".
func (rs *Set) AppendHello(dst []byte, legacy bool) []byte {
	me := rs.host()
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "hosts")
	dst = bsoncore.AppendStringElement(dst, "0", me)
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst = bsoncore.AppendStringElement(dst, "setName", rs.name)
	dst = bsoncore.AppendInt32Element(dst, "setVersion", 1)
	if legacy {
		dst = bsoncore.AppendBooleanElement(dst, "ismaster", true)
	} else {
		dst = bsoncore.AppendBooleanElement(dst, "isWritablePrimary", true)
	}
	dst = bsoncore.AppendBooleanElement(dst, "secondary", false)
	dst = bsoncore.AppendStringElement(dst, "primary", me)
	dst = bsoncore.AppendStringElement(dst, "me", me)
	dst = bsoncore.AppendObjectIDElement(dst, "electionId", rs.electionID)
	last := rs.times.Now()
	lidx, dst := bsoncore.AppendDocumentElementStart(dst, "lastWrite")
	dst = appendOpTime(dst, "opTime", last)
	dst = bsoncore.AppendDateTimeElement(dst, "lastWriteDate", int64(last.T)*1000)
	dst = appendOpTime(dst, "majorityOpTime", last)
	dst = bsoncore.AppendDateTimeElement(dst, "majorityWriteDate", int64(last.T)*1000)
	dst, _ = bsoncore.AppendDocumentEnd(dst, lidx)
	return dst
}

// appendOpTime appends {ts, t}, an optime of this set's only term.
func appendOpTime(dst []byte, key string, ts bson.Timestamp) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendTimestampElement(dst, "ts", ts.T, ts.I)
	dst = bsoncore.AppendInt64Element(dst, "t", replTerm)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func opTime(ts bson.Timestamp) bson.D {
	return bson.D{{Key: "ts", Value: ts}, {Key: "t", Value: int64(replTerm)}}
}

// replSetGetStatus answers as the primary of a healthy one-member set.
func (rs *Set) replSetGetStatus(context.Context, *command.Request) (bson.Raw, error) {
	now := rs.wall.Now()
	last := rs.times.Now()
	lastDate := time.Unix(int64(last.T), 0).UTC()
	elected := rs.started.UTC()
	member := bson.D{
		{Key: "_id", Value: int32(0)},
		{Key: "name", Value: rs.host()},
		{Key: "health", Value: 1.0},
		{Key: "state", Value: int32(1)},
		{Key: "stateStr", Value: "PRIMARY"},
		{Key: "uptime", Value: int32(time.Since(rs.started) / time.Second)},
		{Key: "optime", Value: opTime(last)},
		{Key: "optimeDate", Value: lastDate},
		{Key: "lastAppliedWallTime", Value: lastDate},
		{Key: "lastDurableWallTime", Value: lastDate},
		{Key: "syncSourceHost", Value: ""},
		{Key: "syncSourceId", Value: int32(-1)},
		{Key: "infoMessage", Value: ""},
		{Key: "electionTime", Value: bson.Timestamp{T: uint32(elected.Unix()), I: 1}},
		{Key: "electionDate", Value: elected},
		{Key: "configVersion", Value: int32(1)},
		{Key: "configTerm", Value: int32(replTerm)},
		{Key: "self", Value: true},
		{Key: "lastHeartbeatMessage", Value: ""},
	}
	return command.OK(
		bson.E{Key: "set", Value: rs.name},
		bson.E{Key: "date", Value: now},
		bson.E{Key: "myState", Value: int32(1)},
		bson.E{Key: "term", Value: int64(replTerm)},
		bson.E{Key: "syncSourceHost", Value: ""},
		bson.E{Key: "syncSourceId", Value: int32(-1)},
		bson.E{Key: "heartbeatIntervalMillis", Value: int64(2000)},
		bson.E{Key: "majorityVoteCount", Value: int32(1)},
		bson.E{Key: "writeMajorityCount", Value: int32(1)},
		bson.E{Key: "votingMembersCount", Value: int32(1)},
		bson.E{Key: "writableVotingMembersCount", Value: int32(1)},
		bson.E{Key: "optimes", Value: bson.D{
			{Key: "lastCommittedOpTime", Value: opTime(last)},
			{Key: "lastCommittedWallTime", Value: lastDate},
			{Key: "readConcernMajorityOpTime", Value: opTime(last)},
			{Key: "appliedOpTime", Value: opTime(last)},
			{Key: "durableOpTime", Value: opTime(last)},
			{Key: "lastAppliedWallTime", Value: lastDate},
			{Key: "lastDurableWallTime", Value: lastDate},
		}},
		bson.E{Key: "lastStableRecoveryTimestamp", Value: last},
		bson.E{Key: "members", Value: bson.A{member}},
	)
}

// replSetConfig is the set's configuration document, as replSetGetConfig
// returns it with MongoDB 7's defaults.
func (rs *Set) config() bson.D {
	return bson.D{
		{Key: "_id", Value: rs.name},
		{Key: "version", Value: int32(1)},
		{Key: "term", Value: int32(replTerm)},
		{Key: "members", Value: bson.A{bson.D{
			{Key: "_id", Value: int32(0)},
			{Key: "host", Value: rs.host()},
			{Key: "arbiterOnly", Value: false},
			{Key: "buildIndexes", Value: true},
			{Key: "hidden", Value: false},
			{Key: "priority", Value: 1.0},
			{Key: "tags", Value: bson.D{}},
			{Key: "secondaryDelaySecs", Value: int64(0)},
			{Key: "votes", Value: int32(1)},
		}}},
		{Key: "protocolVersion", Value: int64(1)},
		{Key: "writeConcernMajorityJournalDefault", Value: true},
		{Key: "settings", Value: bson.D{
			{Key: "chainingAllowed", Value: true},
			{Key: "heartbeatIntervalMillis", Value: int32(2000)},
			{Key: "heartbeatTimeoutSecs", Value: int32(10)},
			{Key: "electionTimeoutMillis", Value: int32(10000)},
			{Key: "catchUpTimeoutMillis", Value: int32(-1)},
			{Key: "catchUpTakeoverDelayMillis", Value: int32(30000)},
			{Key: "getLastErrorModes", Value: bson.D{}},
			{Key: "getLastErrorDefaults", Value: bson.D{{Key: "w", Value: int32(1)}, {Key: "wtimeout", Value: int32(0)}}},
			{Key: "replicaSetId", Value: rs.replicaSetID},
		}},
	}
}

func (rs *Set) replSetGetConfig(context.Context, *command.Request) (bson.Raw, error) {
	return command.OK(bson.E{Key: "config", Value: rs.config()})
}

// replSetInitiate accepts what would initiate this very set: no config (the
// shell's rs.initiate()), or a config of one member named by this server's
// advertised address under the set's name. The set is initiated from the
// start, so nothing changes. Anything else fails as MongoDB rejects a
// config that cannot be this node's.
func (rs *Set) replSetInitiate(_ context.Context, req *command.Request) (bson.Raw, error) {
	v := req.Body.Index(0).Value()
	if v.Type == bson.TypeEmbeddedDocument {
		if err := rs.checkInitiateConfig(v.Document()); err != nil {
			return nil, err
		}
	} else if v.Type != bson.TypeNull && v.Type != bson.TypeUndefined {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "no configuration specified; expected an object, got %s", command.TypeName(v.Type))
	}
	return command.OK()
}

func (rs *Set) checkInitiateConfig(cfg bson.Raw) error {
	if len(cfg) <= 5 {
		return nil // {}: the default config of this node
	}
	id, ok := cfg.Lookup("_id").StringValueOK()
	if !ok {
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig, "replica set configuration must have a string _id")
	}
	if id != rs.name {
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig,
			"Attempting to initiate a replica set with name %s, but command line reports %s; rejecting", id, rs.name)
	}
	members, ok := cfg.Lookup("members").ArrayOK()
	if !ok {
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig, "replica set configuration must have a members array")
	}
	values, _ := members.Values()
	if len(values) != 1 {
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig,
			"Lethe runs a one-member replica set; the configuration names %d members", len(values))
	}
	m, ok := values[0].DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig, "replica set members must be objects")
	}
	host, _ := m.Lookup("host").StringValueOK()
	if host != rs.host() {
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig,
			"No host described in new configuration with {version: 1, term: 0} for replica set %s maps to this node; this node is %s", rs.name, rs.host())
	}
	return nil
}

// Commands are the commands of rs.status(), rs.conf() and rs.initiate(),
// answered as a one-member set, for the server's registry.
func (rs *Set) Commands() []command.Command {
	return []command.Command{
		{Name: "replSetGetStatus", Handle: rs.replSetGetStatus, AdminOnly: true},
		{Name: "replSetGetConfig", Handle: rs.replSetGetConfig, AdminOnly: true},
		{Name: "replSetInitiate", Handle: rs.replSetInitiate, AdminOnly: true},
	}
}
