package cursor

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
)

// storeSource is an Appender whose documents live in memory that Close
// overwrites, as a store's iterator memory is valid only while it is open.
type storeSource struct {
	SliceSource
	mem    [][]byte
	closed bool
}

func newStoreSource(n int) *storeSource {
	s := &storeSource{}
	for i := range n {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: fmt.Sprint(i * 1000)}})
		s.mem = append(s.mem, d)
		s.docs = append(s.docs, d)
	}
	return s
}

func (s *storeSource) AppendBatch(ctx context.Context, dst []byte, n int, maxBytes int) ([]byte, error) {
	docs, err := s.NextBatch(ctx, n, maxBytes)
	if err != nil {
		return dst, err
	}
	return appendBatch(dst, docs), nil
}

func (s *storeSource) Close() error {
	s.closed = true
	for _, d := range s.mem {
		for i := range d {
			d[i] = 0xee
		}
	}
	return nil
}

// TestReplyAppendsBeforeClosing checks that the first batch and getMore's
// go into the reply while the source's memory is valid, that an Appender's
// reply is byte for byte a plain source's, and that exhausted cursors
// close and answer id 0.
func TestReplyAppendsBeforeClosing(t *testing.T) {
	ctx := context.Background()
	by := testOwner{Conn: 1, Client: "client"}
	var tab Table
	for _, tc := range []struct {
		name      string
		n, batch  int
		single    bool
		wantOpen  bool
		getMoreOf int
	}{
		{name: "exhausted", n: 3, batch: 101},
		{name: "single", n: 5, batch: 2, single: true},
		{name: "more", n: 5, batch: 2, wantOpen: true, getMoreOf: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plainReq, appendReq command.Request
			plain := &SliceSource{docs: newStoreSource(tc.n).docs}
			src := newStoreSource(tc.n)
			want, err := tab.Reply(ctx, &plainReq, by, plain, "db.c", tc.batch, Options{Single: tc.single})
			if err != nil {
				t.Fatal(err)
			}
			want = bytes.Clone(want)
			got, err := tab.Reply(ctx, &appendReq, by, src, "db.c", tc.batch, Options{Single: tc.single})
			if err != nil {
				t.Fatal(err)
			}
			id := got.Lookup("cursor", "id").Int64()
			if (id != 0) != tc.wantOpen || src.closed == tc.wantOpen {
				t.Fatalf("id %d, closed %v", id, src.closed)
			}
			// The ids are random; the rest is the same.
			wantID := want.Lookup("cursor", "id").Int64()
			if !bytes.Equal(bytes.Replace(got, le64(id), le64(wantID), 1), want) {
				t.Fatalf("reply %s, want %s", got, want)
			}
			if err := bson.Raw(got).Validate(); err != nil || bytes.Contains(got, []byte{0xee, 0xee}) {
				t.Fatalf("reply %v %s", err, got)
			}
			if !tc.wantOpen {
				return
			}
			getMore := func(req *command.Request, id int64) bson.Raw {
				req.DB = "db"
				req.Body, _ = bson.Marshal(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: tc.getMoreOf}})
				reply, err := tab.GetMore(ctx, req, by)
				if err != nil {
					t.Fatal(err)
				}
				return reply
			}
			want = bytes.Clone(getMore(&plainReq, wantID))
			got = getMore(&appendReq, id)
			if !bytes.Equal(got, want) || got.Lookup("cursor", "id").Int64() != 0 {
				t.Fatalf("getMore %s, want %s", got, want)
			}
			if bytes.Contains(got, []byte{0xee, 0xee}) {
				t.Fatalf("getMore read closed memory: %s", got)
			}
			if n, held := tab.Usage(); n != 0 || held != 0 {
				t.Fatalf("%d cursors open, holding %d bytes", n, held)
			}
		})
	}
}

func le64(v int64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}
