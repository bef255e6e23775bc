package server

// Fail points, with which drivers' tests exercise their error handling:
// configureFailPoint sets them, and only on a server started with
// --enable-test-commands (Config.EnableTestCommands), as mongod's
// enableTestCommands; otherwise the command does not exist. The one fail
// point is MongoDB's failCommand.

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// Codes of fail points, as MongoDB's.
const (
	codeFailPointSetFailed   mongoerr.Code = 237
	codeFailPointClosedConn  mongoerr.Code = 50985
	failCommandMessage                     = "Failing command via 'failCommand' failpoint"
	labelRetryableWriteError               = "RetryableWriteError"
)

// Modes of a fail point.
const (
	fpOff = iota
	fpAlwaysOn
	fpTimes // on for the next n activations
	fpSkip  // off for the next n activations, then on
)

// failCommand is the failCommand fail point: its mode and its data.
type failCommand struct {
	// on is mode != fpOff, read without the lock by every command.
	on      atomic.Bool
	mu      sync.Mutex
	mode    int
	n       int64 // activations left (fpTimes) or to skip (fpSkip)
	entered int64 // activations so far, configureFailPoint's count
	data    failCommandData
}

// failCommandData is failCommand's data document, parsed.
type failCommandData struct {
	commands   []string // failCommands
	all        bool     // failAllCommands
	code       mongoerr.Code
	hasCode    bool
	close      bool
	block      bool
	blockTime  int64 // ms; -1 when missing or not an integer
	labels     []string
	hasLabels  bool
	wce        bson.Raw // writeConcernError
	appName    string
	hasAppName bool
	namespace  string
	hasNS      bool
}

func (s *Server) testCommands() []commandDef {
	if !s.cfg.EnableTestCommands {
		return nil
	}
	return []commandDef{{name: "configureFailPoint", handle: s.configureFailPoint, adminOnly: true}}
}

// configureFailPoint sets a fail point's mode and data:
// {configureFailPoint: "failCommand", mode: "alwaysOn"|"off"|{times: n}|{skip: n}, data}.
// It answers with the number of times the fail point was entered before.
func (s *Server) configureFailPoint(_ context.Context, req *Request) (bson.Raw, error) {
	name, ok := command.FirstValue(req.Body).StringValueOK()
	if !ok || name != "failCommand" {
		if !ok {
			name = command.FirstValue(req.Body).String()
		}
		return nil, mongoerr.New(codeFailPointSetFailed, "%s not found", name)
	}
	mode, n, err := parseFailPointMode(req.Body.Lookup("mode"))
	if err != nil {
		return nil, err
	}
	var data failCommandData
	if v, err := req.Body.LookupErr("data"); err == nil {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "the 'data' option must be a JSON object")
		}
		data = parseFailCommandData(d)
	}
	fc := &s.failCommand
	fc.mu.Lock()
	count := fc.entered
	fc.mode, fc.n, fc.data, fc.entered = mode, n, data, 0
	fc.on.Store(mode != fpOff)
	fc.mu.Unlock()
	s.log.Warn("set failpoint", zap.String("failPoint", name), zap.Stringer("command", req.Body))
	return command.OK(bson.E{Key: "count", Value: count})
}

// parseFailPointMode reads mode as MongoDB's fail points do.
func parseFailPointMode(v bson.RawValue) (mode int, n int64, err error) {
	switch v.Type {
	case 0:
		return 0, 0, mongoerr.New(mongoerr.IllegalOperation, "When setting a failpoint, you must supply a 'mode'")
	case bson.TypeString:
		switch v.StringValue() {
		case "off":
			return fpOff, 0, nil
		case "alwaysOn":
			return fpAlwaysOn, 0, nil
		}
		return 0, 0, mongoerr.New(mongoerr.BadValue, "unknown mode: %s", v.StringValue())
	case bson.TypeEmbeddedDocument:
		d := v.Document()
		for _, opt := range []struct {
			key  string
			mode int
		}{{"times", fpTimes}, {"skip", fpSkip}} {
			x, err := d.LookupErr(opt.key)
			if err != nil {
				continue
			}
			n, ok := integral(x)
			switch {
			case !ok:
				return 0, 0, mongoerr.New(mongoerr.TypeMismatch, "'%s' option to 'mode' must be a number", opt.key)
			case n < 0:
				return 0, 0, mongoerr.New(mongoerr.BadValue, "'%s' option to 'mode' must be positive", opt.key)
			case n > math.MaxInt32:
				return 0, 0, mongoerr.New(mongoerr.BadValue, "'%s' option to 'mode' is too large", opt.key)
			}
			if opt.mode == fpTimes && n == 0 {
				return fpOff, 0, nil
			}
			return opt.mode, n, nil
		}
		return 0, 0, mongoerr.New(mongoerr.BadValue, "'mode' must be one of 'off', 'alwaysOn', '{times:n}' or '{skip:n}'")
	}
	return 0, 0, mongoerr.New(mongoerr.TypeMismatch, "'mode' must be a string or JSON object")
}

// integral reads an integer-valued number.
func integral(v bson.RawValue) (int64, bool) {
	switch v.Type {
	case bson.TypeInt32:
		return int64(v.Int32()), true
	case bson.TypeInt64:
		return v.Int64(), true
	case bson.TypeDouble:
		f := v.Double()
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// parseFailCommandData reads failCommand's data. Fields of the wrong type
// are ignored, as MongoDB's extraction ignores them.
func parseFailCommandData(d bson.Raw) failCommandData {
	var fd failCommandData
	fd.blockTime = -1
	for key, v := range command.Fields(d) {
		switch string(key) {
		case "failCommands":
			if arr, ok := v.ArrayOK(); ok {
				vals, _ := arr.Values()
				for _, x := range vals {
					if name, ok := x.StringValueOK(); ok {
						fd.commands = append(fd.commands, name)
					}
				}
			}
		case "failAllCommands":
			fd.all = true
		case "errorCode":
			if n, ok := integral(v); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
				fd.code, fd.hasCode = mongoerr.Code(n), true
			}
		case "closeConnection":
			fd.close, _ = v.BooleanOK()
		case "blockConnection":
			fd.block, _ = v.BooleanOK()
		case "blockTimeMS":
			if n, ok := integral(v); ok {
				fd.blockTime = n
			}
		case "errorLabels":
			if arr, ok := v.ArrayOK(); ok {
				fd.hasLabels = true
				fd.labels = []string{}
				vals, _ := arr.Values()
				for _, x := range vals {
					if l, ok := x.StringValueOK(); ok {
						fd.labels = append(fd.labels, l)
					}
				}
			}
		case "writeConcernError":
			if wce, ok := v.DocumentOK(); ok {
				fd.wce = bson.Raw(append([]byte(nil), wce...))
			}
		case "appName":
			fd.appName, fd.hasAppName = v.StringValueOK()
		case "namespace":
			fd.namespace, fd.hasNS = v.StringValueOK()
		}
	}
	return fd
}

// activateFailCommand decides whether failCommand fails this command, counting the
// activation against its mode, and returns its data if so.
func (s *Server) activateFailCommand(cmd *commandDef, req *Request) (*failCommandData, bool) {
	fc := &s.failCommand
	if !fc.on.Load() {
		return nil, false
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.mode == fpOff || cmd.name == "configureFailPoint" || !s.failCommandApplies(&fc.data, cmd, req) {
		return nil, false
	}
	switch fc.mode {
	case fpTimes:
		if fc.n--; fc.n <= 0 {
			fc.mode = fpOff
			fc.on.Store(false)
		}
	case fpSkip:
		if fc.n > 0 {
			fc.n--
			return nil, false
		}
	}
	fc.entered++
	data := fc.data
	return &data, true
}

// failCommandApplies is failCommand's filter: the command, the client's
// appName, the namespace, and something to do.
func (s *Server) failCommandApplies(d *failCommandData, cmd *commandDef, req *Request) bool {
	if !d.close && !d.block && !d.hasCode && d.wce == nil {
		return false
	}
	if d.hasAppName && requestAppName(req) != d.appName {
		return false
	}
	if d.hasNS {
		coll, _ := command.FirstValue(req.Body).StringValueOK()
		if d.namespace != req.DB+"."+coll {
			return false
		}
	}
	if d.all {
		return true
	}
	for _, name := range d.commands {
		if s.commands[name] == cmd {
			return true
		}
	}
	return false
}

// requestAppName is the client's appName for failCommand's filter. The
// handshake hello carries it in its client metadata and the hello handler
// records it on the connection only when it runs, after the fail point is
// checked; mongod filters that first hello by the name too, which is how
// drivers test their handshake errors (the SDAM and CMAP specification
// tests' failCommand on hello with appName).
func requestAppName(req *Request) string {
	if req.Conn.appName != "" {
		return req.Conn.appName
	}
	name, _ := req.Body.Lookup("client", "application", "name").StringValueOK()
	return name
}

// failCommandBefore applies failCommand before the command runs: it
// blocks, closes the connection (the client gets no reply) or fails the
// command. The data is kept on the request for its labels and
// writeConcernError.
func (s *Server) failCommandBefore(ctx context.Context, cmd *commandDef, req *Request) error {
	req.failed = nil
	d, ok := s.activateFailCommand(cmd, req)
	if !ok {
		return nil
	}
	req.failed = d
	if d.block {
		if d.blockTime < 0 {
			return mongoerr.New(mongoerr.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true")
		}
		s.log.Info("blocking command via 'failCommand' failpoint", zap.String("command", cmd.name), zap.Int64("blockTimeMS", d.blockTime))
		t := time.NewTimer(time.Duration(d.blockTime) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if d.close {
		s.log.Info("failing command via 'failCommand' failpoint: closing connection", zap.String("command", cmd.name), zap.Int64("conn", req.Conn.id))
		req.closeConn = true
		return mongoerr.New(codeFailPointClosedConn, failCommandMessage)
	}
	if d.hasCode {
		return mongoerr.New(d.code, failCommandMessage)
	}
	return nil
}

// failCommandAfter adds failCommand's writeConcernError to a command's
// successful reply, with the labels MongoDB gives it.
func (s *Server) failCommandAfter(cmd *commandDef, req *Request, reply bson.Raw) bson.Raw {
	d := req.failed
	if d == nil || d.wce == nil {
		return reply
	}
	doc := bson.D{}
	for key, v := range command.Fields(reply) {
		if string(key) != "ok" {
			doc = append(doc, bson.E{Key: string(key), Value: v})
		}
	}
	doc = append(doc, bson.E{Key: "writeConcernError", Value: d.wce})
	code, _ := integral(d.wce.Lookup("code"))
	if labels := s.errorLabels(cmd, req, mongoerr.Code(code)); len(labels) > 0 {
		doc = append(doc, bson.E{Key: "errorLabels", Value: labels})
	}
	doc = append(doc, bson.E{Key: "ok", Value: 1.0})
	raw, err := bson.Marshal(doc)
	if err != nil {
		return reply
	}
	return raw
}

// retryableCodes are the codes a retryable write may be retried after, as
// the retryable writes specification lists them.
var retryableCodes = map[mongoerr.Code]bool{
	6: true, 7: true, 89: true, 91: true, 189: true, 262: true, 9001: true,
	10107: true, 11600: true, 11602: true, 13435: true, 13436: true,
}

// nonResumableCodes are the codes of MongoDB's NonResumableChangeStreamError
// category (src/mongo/base/error_codes.yml): mongod labels any reply with
// them so (ErrorLabelBuilder::build in error_labels.cpp), and drivers do
// not resume a change stream after them.
var nonResumableCodes = map[mongoerr.Code]bool{
	mongoerr.ChangeStreamFatalError: true, mongoerr.ChangeStreamHistoryLost: true,
}

const labelNonResumableChangeStream = "NonResumableChangeStreamError"

// errorLabels are the labels of an error with code: failCommand's, when it
// set some, else RetryableWriteError for a retryable code of a write
// command that carries a txnNumber outside a transaction.
func (s *Server) errorLabels(cmd *commandDef, req *Request, code mongoerr.Code) []string {
	if d := req.failed; d != nil && d.hasLabels {
		return d.labels
	}
	if nonResumableCodes[code] {
		return []string{labelNonResumableChangeStream}
	}
	if !retryableCodes[code] {
		return nil
	}
	switch cmd.name {
	case "insert", "update", "delete", "findAndModify":
	default:
		return nil
	}
	if _, err := req.Body.LookupErr("txnNumber"); err != nil {
		return nil
	}
	if _, err := req.Body.LookupErr("autocommit"); err == nil {
		return nil // in a transaction: its own labels, not this one
	}
	return []string{labelRetryableWriteError}
}

// labelError gives e the labels errorLabels decides.
func (s *Server) labelError(cmd *commandDef, req *Request, e *mongoerr.Error) *mongoerr.Error {
	labels := s.errorLabels(cmd, req, e.Code)
	if len(labels) == 0 {
		return e
	}
	labelled := *e
	labelled.Labels = labels
	return &labelled
}
