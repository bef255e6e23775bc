package storeadmin

// Cluster parameters: setClusterParameter and getClusterParameter, for the
// one Lethe has, changeStreamOptions (preAndPostImages.expireAfterSeconds).

import (
	"context"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

const changeStreamOptionsParam = "changeStreamOptions"

// standaloneRefusal is mongod's answer to a cluster parameter command
// outside a replica set.
func (s *Service) standaloneRefusal(cmd string) error {
	if !s.cfg.ReplicaSet || s.eng.Oplog() == nil {
		return mongoerr.New(mongoerr.IllegalOperation, "%s cannot be run on standalones", cmd)
	}
	return nil
}

func (s *Service) setClusterParameter(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "setClusterParameter"
	if err := s.standaloneRefusal(cmd); err != nil {
		return nil, err
	}
	for key := range command.Args(req.Body) {
		if string(key) != "writeConcern" {
			return nil, command.UnknownField(cmd, key)
		}
	}
	arg, err := command.Doc(cmd, cmd, req.Body.Index(0).Value())
	if err != nil {
		return nil, err
	}
	var value bson.RawValue
	for key, v := range command.Fields(arg) {
		if value.Type != 0 || string(key) != changeStreamOptionsParam {
			return nil, mongoerr.New(mongoerr.NoSuchKey, "Unknown Cluster Parameter %s", key)
		}
		value = v
	}
	if value.Type == 0 {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Cluster parameter value must be an object")
	}
	expire, err := parseChangeStreamOptions(value)
	if err != nil {
		return nil, err
	}
	if err := s.eng.SetChangeStreamOptions(ctx, expire); err != nil {
		return nil, err
	}
	return command.OK()
}

// parseChangeStreamOptions reads {preAndPostImages: {expireAfterSeconds:
// "off" | <positive integer>}}; it returns 0 for off. Every refusal is
// BadValue, as mongod's validation of the parameter reports it.
func parseChangeStreamOptions(v bson.RawValue) (int64, error) {
	failed := func(reason string) error {
		return mongoerr.New(mongoerr.BadValue, "Failed parsing new changeStreamOptions value%s", reason)
	}
	d, ok := v.DocumentOK()
	if !ok {
		return 0, failed("")
	}
	var images bson.Raw
	for key, f := range command.Fields(d) {
		if string(key) != "preAndPostImages" {
			return 0, failed("BSON field 'changeStreamOptions." + string(key) + "' is an unknown field.")
		}
		if images, ok = f.DocumentOK(); !ok {
			return 0, failed("BSON field 'changeStreamOptions.preAndPostImages' is the wrong type '" + command.TypeName(f.Type) + "', expected type 'object'")
		}
	}
	if images == nil {
		return 0, failed("BSON field 'changeStreamOptions.preAndPostImages' is missing but a required field")
	}
	var expire bson.RawValue
	for key, f := range command.Fields(images) {
		if string(key) != "expireAfterSeconds" {
			return 0, failed("BSON field 'changeStreamOptions.preAndPostImages." + string(key) + "' is an unknown field.")
		}
		expire = f
	}
	switch expire.Type {
	case 0:
		return 0, failed("BSON field 'changeStreamOptions.expireAfterSeconds' is missing but a required field")
	case bson.TypeString:
		if expire.StringValue() != "off" {
			return 0, mongoerr.New(mongoerr.BadValue, "Non-numeric value of 'expireAfterSeconds' should be 'off'")
		}
		return 0, nil
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		f, _ := expire.AsFloat64OK()
		n, exact := expire.AsInt64OK()
		if !exact || float64(n) != f || math.IsInf(f, 0) {
			return 0, failed("")
		}
		if n <= 0 {
			return 0, mongoerr.New(mongoerr.BadValue, "Numeric value of 'expireAfterSeconds' should be positive")
		}
		return n, nil
	}
	return 0, failed("")
}

func (s *Service) getClusterParameter(_ context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "getClusterParameter"
	if err := s.standaloneRefusal(cmd); err != nil {
		return nil, err
	}
	var names []string
	switch v := req.Body.Index(0).Value(); v.Type {
	case bson.TypeString:
		names = []string{v.StringValue()}
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		for _, n := range vals {
			str, ok := n.StringValueOK()
			if !ok {
				return nil, command.WrongType(cmd, cmd, v.Type, "string", "array")
			}
			names = append(names, str)
		}
	default:
		return nil, command.WrongType(cmd, cmd, v.Type, "string", "array")
	}
	params := bson.A{}
	for _, n := range names {
		if n != changeStreamOptionsParam && n != "*" {
			return nil, mongoerr.New(mongoerr.NoSuchKey, "Unknown server parameter: %s", n)
		}
		opts := s.eng.ChangeStreamOptions()
		var expire any = "off"
		if opts.ExpireAfterSeconds > 0 {
			expire = opts.ExpireAfterSeconds
		}
		params = append(params, bson.D{
			{Key: "_id", Value: changeStreamOptionsParam},
			{Key: "clusterParameterTime", Value: bson.Timestamp{T: opts.Time.T, I: opts.Time.I}},
			{Key: "preAndPostImages", Value: bson.D{{Key: "expireAfterSeconds", Value: expire}}},
		})
	}
	return command.OK(bson.E{Key: "clusterParameters", Value: params})
}
