package params

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// getParameter answers {getParameter: 1, name: 1, ...}, {getParameter: "*"}
// and {getParameter: {showDetails: true, allParameters: true}, name: 1, ...}.
// Names it does not know are left out; if none is known, it fails.
func (s *Service) getParameter(_ context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "getParameter"
	var all, details bool
	switch v := req.Body.Index(0).Value(); v.Type {
	case bson.TypeString:
		all = v.StringValue() == "*"
	case bson.TypeEmbeddedDocument:
		for key, opt := range command.Fields(v.Document()) {
			var err error
			switch string(key) {
			case "allParameters":
				all, err = command.Bool(cmd, "allParameters", opt)
			case "showDetails":
				details, err = command.Bool(cmd, "showDetails", opt)
			default:
				err = command.UnknownField(cmd, key)
			}
			if err != nil {
				return nil, err
			}
		}
	}

	var names []string
	if all {
		names = s.names()
	} else {
		for key := range command.Args(req.Body) {
			if _, known := s.params[string(key)]; known {
				names = append(names, string(key))
			}
		}
	}
	if len(names) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	reply := make([]bson.E, 0, len(names))
	for _, name := range names {
		p := s.params[name]
		value := p.get()
		if details {
			value = bson.D{
				{Key: "value", Value: value},
				{Key: "settableAtRuntime", Value: p.set != nil},
				{Key: "settableAtStartup", Value: p.startup},
			}
		}
		reply = append(reply, bson.E{Key: name, Value: value})
	}
	return command.OK(reply...)
}

// setParameter changes one run-time parameter and replies with its value
// before the change as "was".
func (s *Service) setParameter(_ context.Context, req *command.Request) (bson.Raw, error) {
	for key, v := range command.Args(req.Body) {
		p, known := s.params[string(key)]
		switch {
		case !known:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "attempted to set unrecognized parameter [%s], use help:true to see options", key)
		case p.set == nil:
			return nil, mongoerr.New(mongoerr.IllegalOperation, "parameter [%s] cannot be set at runtime", key)
		}
		was := p.get()
		if err := p.set("setParameter", string(key), v); err != nil {
			return nil, err
		}
		return command.OK(bson.E{Key: "was", Value: was})
	}
	return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to set, use help:true to see options")
}
