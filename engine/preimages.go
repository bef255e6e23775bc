package engine

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// PreImagesOption is the collection option that makes updates and deletes
// keep the document's pre-image for change streams.
const PreImagesOption = "changeStreamPreAndPostImages"

// preImagesEnabled reports whether collection options turn pre-images on.
func preImagesEnabled(options bson.Raw) bool {
	d, ok := options.Lookup(PreImagesOption).DocumentOK()
	if !ok {
		return false
	}
	on, _ := d.Lookup("enabled").BooleanOK()
	return on
}

// SetPreAndPostImages is collMod's changeStreamPreAndPostImages. As in
// MongoDB the option is stored, and listed, only while enabled.
func (e *Engine) SetPreAndPostImages(db, coll string, enabled bool) error {
	entry := bson.D{{Key: "collMod", Value: coll}, {Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: enabled}}}}
	return e.modifyOptions(db, coll, func(opts bson.D) (bson.D, error) {
		kept := opts[:0]
		for _, o := range opts {
			if o.Key != PreImagesOption {
				kept = append(kept, o)
			}
		}
		if enabled {
			kept = append(kept, bson.E{Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: true}}})
		}
		return kept, nil
	}, entry)
}

// modifyOptions is collMod of db.coll's stored options: change gets them
// decoded and returns them as they are to be, and entry is the collMod
// the oplog records.
func (e *Engine) modifyOptions(db, coll string, change func(opts bson.D) (bson.D, error), entry bson.D) error {
	c := e.collection(db, coll)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, coll)
	}
	c.ddl.Lock()
	defer c.ddl.Unlock()
	return e.updateMeta(c, func(meta *collMeta, _ kv.Txn) error {
		var opts bson.D
		if len(meta.Options) > 0 {
			if err := bson.Unmarshal(meta.Options, &opts); err != nil {
				return fmt.Errorf("engine: collection options of %s.%s: %w", db, coll, err)
			}
		}
		opts, err := change(opts)
		if err != nil {
			return err
		}
		if len(opts) == 0 {
			meta.Options = nil
			return nil
		}
		raw, err := bson.Marshal(opts)
		if err != nil {
			return fmt.Errorf("engine: collection options: %w", err)
		}
		meta.Options = raw
		return nil
	}, func(old, _ *collMeta) []oplog.Entry {
		return cmdEntry(db, old.UUID.Data, entry, collModO2(old, nil))
	})
}

// PreImage returns the pre-image stored with the oplog entry at ts, nil if
// there is none: the collection did not keep them then, the entry is no
// update or delete, it has been trimmed, or it has expired under the
// changeStreamOptions cluster parameter.
func (e *Engine) PreImage(ts oplog.Timestamp) (bson.Raw, error) {
	if ts.Less(e.imagesExpireBefore()) {
		return nil, nil // expired under changeStreamOptions
	}
	v, err := e.store.Get(context.TODO(), oplog.AppendPreImageKey(nil, ts))
	if err == kv.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read pre-image at %v: %w", ts, err)
	}
	return append(bson.Raw(nil), v...), nil
}
