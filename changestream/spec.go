package changestream

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// Scope is what a stream watches.
type Scope int

const (
	Collection Scope = iota // one collection: aggregate: "<coll>"
	Database                // every collection of a database: aggregate: 1
	Cluster                 // every database: aggregate: 1 on admin, allChangesForCluster
)

// FullDocument is how update events carry the document.
type FullDocument string

const (
	FullDocDefault       FullDocument = "default"
	FullDocUpdateLookup  FullDocument = "updateLookup"
	FullDocWhenAvailable FullDocument = "whenAvailable"
	FullDocRequired      FullDocument = "required"
)

// BeforeChange is whether update, replace and delete events carry the
// document's pre-image.
type BeforeChange string

const (
	BeforeChangeOff           BeforeChange = "off"
	BeforeChangeWhenAvailable BeforeChange = "whenAvailable"
	BeforeChangeRequired      BeforeChange = "required"
)

// Spec is a parsed $changeStream stage with the namespace it runs on.
type Spec struct {
	Scope Scope
	DB    string
	Coll  string // for Collection scope

	ResumeAfter *Token
	StartAfter  *Token
	// StartAt is startAtOperationTime; zero if not given.
	StartAt oplog.Timestamp

	FullDocument FullDocument
	// BeforeChange is fullDocumentBeforeChange: off, whenAvailable or
	// required.
	BeforeChange BeforeChange
	// ShowExpanded is showExpandedEvents: create, createIndexes,
	// dropIndexes and modify events, and collectionUUID,
	// operationDescription and disambiguatedPaths on events.
	ShowExpanded bool
	// ShowExpireEvents asks for Lethe's expire events (see README). It
	// follows showExpandedEvents unless given: expire is an expanded event
	// type, and a driver that passes only the options it knows (the Node.js
	// driver before 7.0, which mongoose 8 bundles) passes
	// showExpandedEvents but drops showExpireEvents.
	ShowExpireEvents bool
}

// ParseSpec parses the argument of a $changeStream stage of an aggregate on
// db, on coll ("" for aggregate: 1).
func ParseSpec(stage bson.RawValue, db, coll string) (*Spec, error) {
	d, ok := stage.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location50808, "$changeStream stage expects a document as argument")
	}
	sp := &Spec{DB: db, Coll: coll, FullDocument: FullDocDefault, BeforeChange: BeforeChangeOff}
	allForCluster := false
	resumeOpts := 0
	expireGiven := false
	elems, err := d.Elements()
	if err != nil {
		return nil, fmt.Errorf("changestream: %w", err)
	}
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "resumeAfter", "startAfter":
			t, err := ParseToken(v)
			if err != nil {
				return nil, err
			}
			if el.Key() == "resumeAfter" {
				sp.ResumeAfter = &t
			} else {
				sp.StartAfter = &t
			}
			resumeOpts++
		case "startAtOperationTime":
			t, i, ok := v.TimestampOK()
			if !ok {
				return nil, wrongType("startAtOperationTime", v, "timestamp")
			}
			sp.StartAt = oplog.Timestamp{T: t, I: i}
			resumeOpts++
		case "fullDocument":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, wrongType("fullDocument", v, "string")
			}
			switch f := FullDocument(s); f {
			case FullDocDefault, FullDocUpdateLookup, FullDocWhenAvailable, FullDocRequired:
				sp.FullDocument = f
			default:
				return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocument' is not a valid value.", s)
			}
		case "fullDocumentBeforeChange":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, wrongType("fullDocumentBeforeChange", v, "string")
			}
			switch b := BeforeChange(s); b {
			case BeforeChangeOff, BeforeChangeWhenAvailable, BeforeChangeRequired:
				sp.BeforeChange = b
			default:
				return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.", s)
			}
		case "allChangesForCluster":
			if allForCluster, ok = v.BooleanOK(); !ok {
				return nil, wrongType("allChangesForCluster", v, "bool")
			}
		case "showExpandedEvents":
			if sp.ShowExpanded, ok = v.BooleanOK(); !ok {
				return nil, wrongType("showExpandedEvents", v, "bool")
			}
		case "showSystemEvents", "showMigrationEvents":
			if _, ok := v.BooleanOK(); !ok {
				return nil, wrongType(el.Key(), v, "bool")
			}
		case "showExpireEvents":
			if sp.ShowExpireEvents, ok = v.BooleanOK(); !ok {
				return nil, wrongType("showExpireEvents", v, "bool")
			}
			expireGiven = true
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$changeStream.%s' is an unknown field.", el.Key())
		}
	}
	if !expireGiven {
		sp.ShowExpireEvents = sp.ShowExpanded
	}
	if resumeOpts > 1 {
		return nil, mongoerr.New(mongoerr.Location40674, "Only one type of resume option is allowed, but multiple were found.")
	}
	switch {
	case coll != "" && allForCluster:
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name")
	case coll != "":
		sp.Scope = Collection
	case allForCluster && db != "admin":
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name")
	case allForCluster:
		sp.Scope = Cluster
	case db == "admin" || db == "config" || db == "local":
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", db)
	default:
		sp.Scope = Database
	}
	if sp.Scope == Collection && (db == "admin" || db == "config" || db == "local") {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", db)
	}
	if sp.ResumeAfter != nil && sp.ResumeAfter.Invalidate() {
		return nil, mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	return sp, nil
}

func wrongType(field string, v bson.RawValue, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$changeStream.%s' is the wrong type '%s', expected type '%s'", field, bsonvalue.TypeName(bsoncore.Type(v.Type)), want)
}
