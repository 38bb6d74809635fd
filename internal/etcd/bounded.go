package etcd

import (
	"context"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultRequestTimeout bounds every key-value request of the API server's etcd client. Without a
// leader (quorum lost) etcd's client retries a write until its context ends, so a request with no
// deadline of its own would hang; with the bound it fails and the API server answers 503.
const DefaultRequestTimeout = 10 * time.Second

// BoundKV makes every request of c's key-value API end after timeout at the latest (watches are
// not affected). It returns c for chaining.
func BoundKV(c *clientv3.Client, timeout time.Duration) *clientv3.Client {
	if timeout > 0 {
		c.KV = boundedKV{KV: c.KV, kv: c.KV, timeout: timeout}
	}
	return c
}

// FenceWrites makes every put of c's key-value API (alone or in a transaction) fail with fence's
// error while it returns one; reads and deletes go through, so space can still be freed. It
// returns c for chaining.
func FenceWrites(c *clientv3.Client, fence func() error) *clientv3.Client {
	c.KV = fencedKV{KV: c.KV, fence: fence}
	return c
}

type fencedKV struct {
	clientv3.KV
	fence func() error
}

func (f fencedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	if err := f.fence(); err != nil {
		return nil, err
	}
	return f.KV.Put(ctx, key, val, opts...)
}

func (f fencedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	if op.IsPut() {
		if err := f.fence(); err != nil {
			return clientv3.OpResponse{}, err
		}
	}
	return f.KV.Do(ctx, op)
}

func (f fencedKV) Txn(ctx context.Context) clientv3.Txn {
	return &fencedTxn{Txn: f.KV.Txn(ctx), fence: f.fence}
}

// fencedTxn refuses a transaction that may put, whichever branch it takes.
type fencedTxn struct {
	clientv3.Txn
	fence func() error
	puts  bool
}

func (t *fencedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *fencedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.puts = t.puts || slices.ContainsFunc(ops, clientv3.Op.IsPut)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *fencedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.puts = t.puts || slices.ContainsFunc(ops, clientv3.Op.IsPut)
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *fencedTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.puts {
		if err := t.fence(); err != nil {
			return nil, err
		}
	}
	return t.Txn.Commit()
}

// boundedKV bounds the unary requests; GetStream, a stream the caller reads at its own pace, passes
// through the embedded KV unbounded.
type boundedKV struct {
	clientv3.KV
	kv      clientv3.KV
	timeout time.Duration
}

var _ clientv3.KV = boundedKV{}

func (b boundedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.kv.Put(ctx, key, val, opts...)
}

func (b boundedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.kv.Get(ctx, key, opts...)
}

func (b boundedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.kv.Delete(ctx, key, opts...)
}

func (b boundedKV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.kv.Compact(ctx, rev, opts...)
}

func (b boundedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return b.kv.Do(ctx, op)
}

func (b boundedKV) Txn(ctx context.Context) clientv3.Txn {
	return &boundedTxn{ctx: ctx, b: b}
}

// boundedTxn collects the transaction and sends it on Commit, under the bound.
type boundedTxn struct {
	ctx       context.Context
	b         boundedKV
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

func (t *boundedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	return t
}

func (t *boundedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = append(t.then, ops...)
	return t
}

func (t *boundedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.els = append(t.els, ops...)
	return t
}

func (t *boundedTxn) Commit() (*clientv3.TxnResponse, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.b.timeout)
	defer cancel()
	return t.b.kv.Txn(ctx).If(t.cmps...).Then(t.then...).Else(t.els...).Commit()
}
