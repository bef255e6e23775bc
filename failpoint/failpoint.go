package failpoint

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
	codeFailPointSetFailed  mongoerr.Code = 237
	codeFailPointClosedConn mongoerr.Code = 50985
	failCommandMessage                    = "Failing command via 'failCommand' failpoint"
)

// Modes of a fail point.
const (
	fpOff = iota
	fpAlwaysOn
	fpTimes // on for the next n activations
	fpSkip  // off for the next n activations, then on
)

// FailCommand is the failCommand fail point: its mode and its data.
type FailCommand struct {
	log *zap.Logger
	// on is mode != fpOff, read without the lock by every command.
	on      atomic.Bool
	mu      sync.Mutex
	mode    int
	n       int64 // activations left (fpTimes) or to skip (fpSkip)
	entered int64 // activations so far, configureFailPoint's count
	data    Data
}

// New returns the failCommand fail point, off; log records its settings
// and activations.
func New(log *zap.Logger) *FailCommand { return &FailCommand{log: log} }

// Data is failCommand's data document, parsed.
type Data struct {
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

// Labels are the errorLabels the data sets, and whether it sets them
// (an empty list replaces the labels too).
func (d *Data) Labels() ([]string, bool) { return d.labels, d.hasLabels }

// Commands are configureFailPoint, for the server's registry.
func (fc *FailCommand) Commands() []command.Command {
	return []command.Command{{Name: "configureFailPoint", Handle: fc.configureFailPoint, AdminOnly: true}}
}

// configureFailPoint sets a fail point's mode and data:
// {configureFailPoint: "failCommand", mode: "alwaysOn"|"off"|{times: n}|{skip: n}, data}.
// It answers with the number of times the fail point was entered before.
func (fc *FailCommand) configureFailPoint(_ context.Context, req *command.Request) (bson.Raw, error) {
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
	var data Data
	if v, err := req.Body.LookupErr("data"); err == nil {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "the 'data' option must be a JSON object")
		}
		data = ParseData(d)
	}
	fc.mu.Lock()
	count := fc.entered
	fc.mode, fc.n, fc.data, fc.entered = mode, n, data, 0
	fc.on.Store(mode != fpOff)
	fc.mu.Unlock()
	fc.log.Warn("set failpoint", zap.String("failPoint", name), zap.Stringer("command", req.Body))
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

// ParseData reads failCommand's data. Fields of the wrong type
// are ignored, as MongoDB's extraction ignores them.
func ParseData(d bson.Raw) Data {
	var fd Data
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

// Target is the command a fail point is checked against, as the server's
// registry and connection know it.
type Target struct {
	// Name is the command's name in the registry.
	Name string
	// Names reports whether name, one of failCommands, names this command
	// in the registry (an alias does).
	Names func(name string) bool
	// AppName is the appName the connection recorded, "" before its
	// handshake hello ran.
	AppName string
	// ConnID is the connection's id, for the log.
	ConnID int64
}

// On reports whether the fail point may apply to any command; when it is
// off, Before has nothing to do.
func (fc *FailCommand) On() bool { return fc.on.Load() }

// activate decides whether failCommand fails this command, counting the
// activation against its mode, and returns its data if so.
func (fc *FailCommand) activate(t *Target, req *command.Request) (*Data, bool) {
	if !fc.on.Load() {
		return nil, false
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.mode == fpOff || t.Name == "configureFailPoint" || !fc.data.applies(t, req) {
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

// applies is failCommand's filter: the command, the client's appName, the
// namespace, and something to do.
func (d *Data) applies(t *Target, req *command.Request) bool {
	if !d.close && !d.block && !d.hasCode && d.wce == nil {
		return false
	}
	if d.hasAppName && requestAppName(t, req) != d.appName {
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
		if t.Names(name) {
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
func requestAppName(t *Target, req *command.Request) string {
	if t.AppName != "" {
		return t.AppName
	}
	name, _ := req.Body.Lookup("client", "application", "name").StringValueOK()
	return name
}

// Before applies failCommand before the command runs: it blocks, closes
// the connection (closeConn: the client gets no reply) or fails the
// command. It returns the data when the fail point applied, which the
// server keeps on the request for its labels and writeConcernError.
func (fc *FailCommand) Before(ctx context.Context, req *command.Request, t Target) (d *Data, closeConn bool, err error) {
	d, ok := fc.activate(&t, req)
	if !ok {
		return nil, false, nil
	}
	if d.block {
		if d.blockTime < 0 {
			return d, false, mongoerr.New(mongoerr.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true")
		}
		fc.log.Info("blocking command via 'failCommand' failpoint", zap.String("command", t.Name), zap.Int64("blockTimeMS", d.blockTime))
		timer := time.NewTimer(time.Duration(d.blockTime) * time.Millisecond)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return d, false, ctx.Err()
		}
	}
	if d.close {
		fc.log.Info("failing command via 'failCommand' failpoint: closing connection", zap.String("command", t.Name), zap.Int64("conn", t.ConnID))
		return d, true, mongoerr.New(codeFailPointClosedConn, failCommandMessage)
	}
	if d.hasCode {
		return d, false, mongoerr.New(d.code, failCommandMessage)
	}
	return d, false, nil
}

// AddWriteConcernError adds failCommand's writeConcernError to a
// command's successful reply, with the labels labels gives its code; d
// may be nil, and without a writeConcernError the reply is unchanged.
func (d *Data) AddWriteConcernError(reply bson.Raw, labels func(mongoerr.Code) []string) bson.Raw {
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
	if l := labels(mongoerr.Code(code)); len(l) > 0 {
		doc = append(doc, bson.E{Key: "errorLabels", Value: l})
	}
	doc = append(doc, bson.E{Key: "ok", Value: 1.0})
	raw, err := bson.Marshal(doc)
	if err != nil {
		return reply
	}
	return raw
}
