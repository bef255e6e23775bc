package tikvkv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
)

// MockCluster is client-go's in-process mock of a TiKV cluster: an
// in-memory MVCC store split into regions, and a mock PD with its TSO.
// Every Store opened on it is a front-end with its own client (region
// cache, lock resolver), as separate processes would be; they share only
// the cluster.
type MockCluster struct {
	cluster *testutils.MockCluster
	open    func() (*tikv.KVStore, error)
	closeDB func() error

	mu   sync.Mutex
	refs int // the cluster's own reference until Close, and one per Store

	// rpc is held for reading by every request to the mock and for
	// writing to close it: client-go's background work (the commit of
	// secondary keys, lock resolution) can outlive its front-end's Close,
	// and a request to the closed mock would crash the process.
	rpc    sync.RWMutex
	closed bool
}

// NewMockCluster starts a mock cluster whose regions split at splitKeys
// (raw keys, prefixes included, in ascending order); none makes one region.
func NewMockCluster(splitKeys ...[]byte) (*MockCluster, error) {
	client, cluster, pd, err := testutils.NewMockTiKV("", nil)
	if err != nil {
		return nil, fmt.Errorf("tikvkv: mock cluster: %w", err)
	}
	testutils.BootstrapWithMultiRegions(cluster, splitKeys...)
	c := &MockCluster{cluster: cluster, closeDB: client.Close, refs: 1}
	c.open = func() (*tikv.KVStore, error) {
		// The clients share the cluster's RPC endpoint, which closing
		// one front-end must not close.
		shared := func(cl tikv.Client) tikv.Client { return sharedClient{cl, c} }
		return tikv.NewTestTiKVStore(client, pd, shared, nil, 0)
	}
	return c, nil
}

// sharedClient is a front-end's handle on the mock's RPC endpoint.
type sharedClient struct {
	tikv.Client
	c *MockCluster
}

func (sharedClient) Close() error { return nil }

// SendRequest does not pass the caller's cancellation to the mock: the mock
// fails a call whose context ended, client-go then marks the store
// unreachable and health-checks it by dialing its address over gRPC, which
// the mock does not listen on, so the store would stay unreachable for
// good. The mock's calls are in-process and short; client-go still sees
// the context between them (its backoffs and lock waits).
func (c sharedClient) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	c.c.rpc.RLock()
	defer c.c.rpc.RUnlock()
	if c.c.closed {
		return nil, errMockClosed
	}
	if r := liteCommitResolve(req); r != nil {
		return c.resolveByCommit(ctx, addr, req, r, timeout)
	}
	if req.Type == tikvrpc.CmdBatchRollback {
		if err := c.spareOthersLocks(ctx, addr, req, timeout); err != nil {
			return nil, err
		}
	}
	return c.Client.SendRequest(context.WithoutCancel(ctx), addr, req, timeout)
}

// liteCommitResolve returns the ResolveLock request of req if it commits
// the locks of listed keys (client-go's lite resolve of a small
// transaction, met by a reader before its secondaries were committed).
// TiKV resolves just those keys; the mock ignores the list and scans the
// whole region under its one mutex, so that on a busy mock readers' lock
// resolutions queue behind each other until requests time out.
func liteCommitResolve(req *tikvrpc.Request) *kvrpcpb.ResolveLockRequest {
	if req.Type != tikvrpc.CmdResolveLock {
		return nil
	}
	r := req.ResolveLock()
	if len(r.Keys) == 0 || r.CommitVersion == 0 || len(r.TxnInfos) > 0 {
		return nil
	}
	return r
}

// spareOthersLocks drops from a rollback request the keys another
// transaction holds a lock on. A transaction whose prewrite met such a
// lock rolls all its keys back, and the mock writes a rollback record on
// every key it holds no lock of, those included: a record newer than the
// holder's start, which the mock's prewrite, checking the holder's keys
// against its start, takes for a conflict, failing the holder's commit
// when the rollback lands before it. TiKV checks no locked key of a
// pessimistic prewrite, so there the record costs the holder nothing.
func (c sharedClient) spareOthersLocks(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) error {
	r := req.BatchRollback()
	keep := r.Keys[:0:0]
	for _, key := range r.Keys {
		probe := tikvrpc.NewRequest(tikvrpc.CmdMvccGetByKey, &kvrpcpb.MvccGetByKeyRequest{Key: key}, req.Context)
		resp, err := c.Client.SendRequest(context.WithoutCancel(ctx), addr, probe, timeout)
		if err != nil {
			return err
		}
		info, ok := resp.Resp.(*kvrpcpb.MvccGetByKeyResponse)
		if ok && info.GetRegionError() == nil {
			if l := info.GetInfo().GetLock(); l != nil && l.StartTs != r.StartVersion {
				continue
			}
		}
		keep = append(keep, key)
	}
	r.Keys = keep
	return nil
}

// resolveByCommit resolves r's keys as TiKV's lite resolve does, by
// committing each key's lock of the transaction: a commit request of those
// keys, which the mock serves key by key. A key whose lock is gone (another
// reader resolved it) is no error, as in a resolve.
func (c sharedClient) resolveByCommit(ctx context.Context, addr string, req *tikvrpc.Request, r *kvrpcpb.ResolveLockRequest, timeout time.Duration) (*tikvrpc.Response, error) {
	commit := tikvrpc.NewRequest(tikvrpc.CmdCommit, &kvrpcpb.CommitRequest{
		StartVersion: r.StartVersion, Keys: r.Keys, CommitVersion: r.CommitVersion,
	}, req.Context)
	resp, err := c.Client.SendRequest(context.WithoutCancel(ctx), addr, commit, timeout)
	if err != nil {
		return nil, err
	}
	cr, ok := resp.Resp.(*kvrpcpb.CommitResponse)
	if !ok {
		return nil, fmt.Errorf("tikvkv: the mock answered a commit with %T", resp.Resp)
	}
	out := &kvrpcpb.ResolveLockResponse{RegionError: cr.GetRegionError()}
	if e := cr.GetError(); e != nil && e.GetRetryable() == "" {
		out.Error = e // a lock with a newer min commit timestamp: say so
	}
	return &tikvrpc.Response{Resp: out}, nil
}

var errMockClosed = errors.New("tikvkv: the mock cluster is closed")

// Open opens a front-end on the cluster.
func (c *MockCluster) Open(opts Options) (*Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs == 0 {
		return nil, fmt.Errorf("tikvkv: the mock cluster is closed")
	}
	s, err := c.open()
	if err != nil {
		return nil, fmt.Errorf("tikvkv: open a client of the mock cluster: %w", err)
	}
	c.refs++
	return newStore(s, opts, c.release, true), nil
}

// Close drops the cluster's own reference: the cluster ends when its last
// front-end closes.
func (c *MockCluster) Close() error { return c.release() }

func (c *MockCluster) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs == 0 {
		return nil
	}
	c.refs--
	if c.refs > 0 {
		return nil
	}
	c.rpc.Lock()
	defer c.rpc.Unlock()
	c.closed = true
	return c.closeDB()
}

// SplitRange splits the regions holding the raw keys [lo, hi) into about n
// regions of as many keys each, as PD does when a range grows.
func (c *MockCluster) SplitRange(lo, hi []byte, n int) { c.cluster.SplitKeys(lo, hi, n) }

// FamilySplits are region boundaries under prefix (DefaultPrefix if empty)
// at a few key families of the engine's layout (documents, indexes, oplog,
// sessions, and "b" for tests' small keys), and at the values' chunks, so
// that scans and commits on a mock cluster cross regions as they do on a
// real one.
func FamilySplits(prefix string) [][]byte {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	k := newKeys(prefix)
	splits := [][]byte{k.chunks}
	for _, family := range []string{"b", "d", "i", "o", "t"} {
		splits = append(splits, k.in([]byte(family)))
	}
	return splits
}

// OpenMock opens a store on a mock cluster of its own, split at
// FamilySplits; the cluster ends when the store closes.
func OpenMock(opts Options) (*Store, error) {
	c, err := NewMockCluster(FamilySplits(opts.Prefix)...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Open(opts)
}
