package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// docSize is the encoded size of every document the tool writes, and of the
// values of the raw pebble commits, so that the server's writes and their
// ceiling move the same number of payload bytes.
const docSize = 200

// loadBatch is how many documents one insertMany carries when preloading.
const loadBatch = 1000

// padding returns the string that, appended to fields as a last "pad"
// field, makes the document docSize bytes long. The encoded size depends
// only on the field names and value types, so one padding serves every
// document of the same shape.
func padding(fields bson.D) (string, error) {
	return paddingTo(fields, docSize)
}

// paddingTo is padding for documents of size bytes.
func paddingTo(fields bson.D, size int) (string, error) {
	doc := append(fields[:len(fields):len(fields)], bson.E{Key: "pad", Value: ""})
	raw, err := bson.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encode document: %w", err)
	}
	n := size - len(raw)
	if n < 0 {
		return "", fmt.Errorf("document of %d bytes exceeds %d before padding", len(raw), size)
	}
	return strings.Repeat("x", n), nil
}

// bulkLoad inserts n documents, doc(0) to doc(n-1), in unordered batches
// sent by clients goroutines at once: parallel batches keep the server's
// group commit busy, which is how a bulk import runs fastest.
func bulkLoad(ctx context.Context, coll *mongo.Collection, n, clients int, doc func(i int) bson.D) error {
	batches := (n + loadBatch - 1) / loadBatch
	var next atomic.Int64
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range min(clients, batches) {
		wg.Go(func() {
			docs := make([]any, 0, loadBatch)
			for {
				b := int(next.Add(1) - 1)
				if b >= batches || ctx.Err() != nil {
					return
				}
				docs = docs[:0]
				for i := b * loadBatch; i < min((b+1)*loadBatch, n); i++ {
					docs = append(docs, doc(i))
				}
				_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
				if err != nil {
					cancel(fmt.Errorf("insert documents %d to %d into %s: %w", b*loadBatch, b*loadBatch+len(docs)-1, coll.Name(), err))
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// drop removes coll so that a run against a long-lived server starts from
// the same empty state as one against a fresh in-process server.
func drop(ctx context.Context, coll *mongo.Collection) error {
	if err := coll.Drop(ctx); err != nil {
		return fmt.Errorf("drop %s: %w", coll.Name(), err)
	}
	return nil
}
