package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// runChangeStream measures change-stream event latency: the time from an
// insert's acknowledgement to its event reaching a watch() on the
// collection, with cfg.clients writers inserting concurrently. It starts
// its own server, since change streams need replica-set mode. An event
// that arrives before its write's acknowledgement counts as zero.
func runChangeStream(ctx context.Context, e *env) ([]result, error) {
	addr, stop, err := startServer(serverKind{replSet: "rs0"})
	if err != nil {
		return nil, err
	}
	defer stop()
	opts := options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").
		SetMaxPoolSize(uint64(e.cfg.clients) + 1).SetTimeout(opTimeout)
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer client.Disconnect(context.Background())
	coll := client.Database(e.db.Name()).Collection("changestream")
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: -1}}); err != nil {
		return nil, err
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(time.Second))
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	defer cs.Close(context.Background())

	var mu sync.Mutex
	acked := map[int64]time.Time{}
	received := map[int64]time.Time{}
	var written int64
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchErr := make(chan error, 1)
	go func() {
		for cs.Next(watchCtx) {
			now := time.Now()
			id, ok := cs.Current.Lookup("documentKey", "_id").AsInt64OK()
			if !ok {
				continue
			}
			mu.Lock()
			received[id] = now
			mu.Unlock()
		}
		watchErr <- cs.Err()
	}()

	s, err := measureFor(ctx, e.cfg.clients, e.cfg.duration, func(client int) op {
		n := int64(0)
		return func(ctx context.Context) error {
			id := int64(client)<<40 | n
			n++
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
				return err
			}
			mu.Lock()
			acked[id] = time.Now()
			written++
			mu.Unlock()
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	// Wait, bounded, for the last events.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := len(received)
		mu.Unlock()
		if int64(got) >= written {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("changestream: %d of %d events arrived", got, written)
		}
		select {
		case err := <-watchErr:
			return nil, fmt.Errorf("changestream: watch ended: %w", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	stopWatch()
	lat := newHistogram()
	mu.Lock()
	for id, at := range acked {
		lat.record(max(received[id].Sub(at), 0))
	}
	mu.Unlock()
	return []result{{name: "changestream-latency", sample: sample{ops: s.ops, elapsed: s.elapsed, latency: lat}}}, nil
}
