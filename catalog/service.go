package catalog

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
)

// Config is what the commands need of the server.
type Config struct {
	Engine  *engine.Engine
	Clock   clock.Clock   // the time of $$NOW in listDatabases' and listCollections' filters
	Cursors *cursor.Table // where listCollections and listIndexes open their cursors
}

// Service answers the catalog commands.
type Service struct {
	eng     *engine.Engine
	clock   clock.Clock
	cursors *cursor.Table
}

// New returns the Service of cfg.
func New(cfg Config) *Service {
	return &Service{eng: cfg.Engine, clock: cfg.Clock, cursors: cfg.Cursors}
}

// Caller is the command's client, as the server knows it.
type Caller interface {
	// CursorOwner is whom the cursors the command opens belong to.
	cursor.Opener
	// ListableDatabases are the databases listDatabases shows the caller.
	ListableDatabases(ctx context.Context) ([]string, error)
}

// Handler runs one catalog command for caller by.
type Handler func(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error)

// Command is a catalog command, for the server's registry.
type Command struct {
	Name      string
	Aliases   []string
	Handle    Handler
	AdminOnly bool
}

// Commands are the catalog commands.
func (s *Service) Commands() []Command {
	return []Command{
		{Name: "create", Handle: s.create},
		{Name: "drop", Handle: s.drop},
		{Name: "dropDatabase", Handle: s.dropDatabase},
		{Name: "listDatabases", Handle: s.listDatabases, AdminOnly: true},
		{Name: "listCollections", Handle: s.listCollections},
		{Name: "renameCollection", Handle: s.renameCollection, AdminOnly: true},
		{Name: "collStats", Handle: s.collStats},
		{Name: "dbStats", Aliases: []string{"dbstats"}, Handle: s.dbStats},
		{Name: "validate", Handle: s.validate},
		{Name: "collMod", Handle: s.collMod},
		{Name: "createIndexes", Handle: s.createIndexes},
		{Name: "listIndexes", Handle: s.listIndexes},
		{Name: "dropIndexes", Aliases: []string{"deleteIndexes"}, Handle: s.dropIndexes},
	}
}

// collectionName is the collection the command's first value names, a
// valid namespace with req.DB.
func collectionName(req *command.Request) (string, error) {
	name, err := command.CollectionArg(req)
	if err != nil {
		return "", err
	}
	if err := engine.ValidateNamespace(req.DB, name); err != nil {
		return "", err
	}
	return name, nil
}

func nonNil(a bson.A) bson.A {
	if a == nil {
		return bson.A{}
	}
	return a
}
