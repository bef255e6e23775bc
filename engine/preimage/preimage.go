package preimage

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/oplog"
)

// Option is the collection option that makes updates and deletes keep
// the document's pre-image for change streams.
const Option = "changeStreamPreAndPostImages"

// Enabled reports whether collection options turn pre-images on.
func Enabled(options bson.Raw) bool {
	d, ok := options.Lookup(Option).DocumentOK()
	if !ok {
		return false
	}
	on, _ := d.Lookup("enabled").BooleanOK()
	return on
}

// Get returns the pre-image stored with the oplog entry at ts, nil if
// there is none: the collection did not keep them then, the entry is no
// update or delete, it has been trimmed, or it has expired under the
// changeStreamOptions cluster parameter.
func (m *Images) Get(ctx context.Context, ts oplog.Timestamp) (bson.Raw, error) {
	if ts.Less(m.expireBefore()) {
		return nil, nil // expired under changeStreamOptions
	}
	v, err := m.host.Get(ctx, oplog.AppendPreImageKey(nil, ts))
	if err == kv.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read pre-image at %v: %w", ts, err)
	}
	return append(bson.Raw(nil), v...), nil
}
