package etcd3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/value"
)

// maxPageSize bounds how many keys one etcd range read returns while a filtered list looks for
// enough matching items.
const maxPageSize = 10000

// Store is a storage.Interface for one resource type on etcd.
type Store struct {
	client      *clientv3.Client
	codec       runtime.Codec
	newFunc     func() runtime.Object
	newListFunc func() runtime.Object
	// transformer seals values on their way into etcd and opens them on the way out (encryption
	// at rest); nil stores the codec's bytes as they are.
	transformer value.Transformer
	// log and clock serve the resend of writes whose outcome etcd could not tell (retry.go).
	log   *slog.Logger
	clock clock.Clock
	// progress says whether etcd's progress notifications may be believed (nil: they may).
	progress *ProgressSupport
}

var _ storage.Interface = (*Store)(nil)

// WithTransformer makes the store seal every value it writes with t and open every value it reads
// with it. Call it before the store is used.
func (s *Store) WithTransformer(t value.Transformer) *Store {
	s.transformer = t
	return s
}

// WithProgressSupport makes the store believe etcd's watch progress notifications (bookmarks,
// answers to RequestWatchProgress) only where p finds etcd's version sound. Call it before the
// store is used.
func (s *Store) WithProgressSupport(p *ProgressSupport) *Store {
	s.progress = p
	return s
}

// WithLogger makes the store log to l (resent writes). Call it before the store is used.
func (s *Store) WithLogger(l *slog.Logger) *Store {
	s.log = l
	return s
}

// New returns a store that keeps objects made by newFunc (lists made by newListFunc) in etcd,
// encoded with codec.
func New(client *clientv3.Client, codec runtime.Codec, newFunc func() runtime.Object, newListFunc func() runtime.Object) *Store {
	return &Store{client: client, codec: codec, newFunc: newFunc, newListFunc: newListFunc,
		log: slog.New(slog.DiscardHandler), clock: clock.RealClock{}}
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	if rv := accessor.GetResourceVersion(); rv != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	data, err := s.encode(obj)
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	sealed, err := s.seal(data, key)
	if err != nil {
		return err
	}
	resp, retried, err := s.commit(ctx, func() clientv3.Txn {
		return s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, unsafeString(sealed))).
			Else(clientv3.OpGet(key))
	})
	if err != nil {
		return s.interpret(ctx, err, storage.OpCreate, key, 0)
	}
	if !resp.Succeeded {
		// After a resend, the key may hold this very create (sealed bytes carry the object's
		// uid and, when encrypted, a fresh nonce: nobody else writes the same).
		if kv := ownWrite(resp, sealed); retried && kv != nil {
			return s.decodePlain(data, out, kv.ModRevision, key)
		}
		return withOp(storage.NewError(storage.ErrCodeExists, key, "", nil), storage.OpCreate)
	}
	return s.decodePlain(data, out, resp.Header.Revision, key)
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	var ops []clientv3.OpOption
	var requested int64
	switch opts.ResourceVersion {
	case "":
	case "0":
		ops = append(ops, clientv3.WithSerializable())
	default:
		rev, err := parseResourceVersion(opts.ResourceVersion)
		if err != nil {
			return err
		}
		requested = rev
		ops = append(ops, clientv3.WithRev(rev))
	}
	resp, err := s.client.Get(ctx, key, ops...)
	if err != nil {
		return s.interpret(ctx, err, storage.OpGet, key, requested)
	}
	if len(resp.Kvs) == 0 {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return withOp(storage.NewError(storage.ErrCodeNotFound, key, "", nil), storage.OpGet)
	}
	return s.decode(resp.Kvs[0].Value, out, resp.Kvs[0].ModRevision, key)
}

// current is the stored state of one key.
type current struct {
	obj runtime.Object
	// data is the codec's bytes (opened, when values are sealed); stale says they were sealed by
	// an older key or provider, so even an unchanged update rewrites them.
	data   []byte
	stale  bool
	rev    int64
	exists bool
}

func (s *Store) currentState(key string, kvs []*mvccpb.KeyValue) (*current, error) {
	if len(kvs) == 0 {
		return &current{obj: s.newFunc()}, nil
	}
	plain, stale, err := s.open(kvs[0].Value, key)
	if err != nil {
		return nil, err
	}
	obj := s.newFunc()
	if err := s.decodePlain(plain, obj, kvs[0].ModRevision, key); err != nil {
		return nil, err
	}
	return &current{obj: obj, data: plain, stale: stale, rev: kvs[0].ModRevision, exists: true}, nil
}

// GuaranteedUpdate implements storage.Interface.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	return s.GuaranteedUpdateFrom(ctx, key, dest, ignoreNotFound, preconditions, tryUpdate, nil)
}

// GuaranteedUpdateFrom implements storage.CachedUpdater: with cached, the first attempt skips the
// read of the key (a round trip to etcd and a decode) and compares against cached's revision.
func (s *Store) GuaranteedUpdateFrom(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error {
	var state *current
	// spare is a private copy of state.obj that the first attempt may hand to tryUpdate.
	var spare runtime.Object
	if cached != nil {
		// A cached copy that cannot be used is no error: the key is read as without one.
		state, spare, _ = s.cachedState(cached)
	}
	// fresh says state was read from etcd, so a verdict drawn from it is final.
	fresh := state == nil
	read := func(ctx context.Context) error {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return s.interpret(ctx, err, storage.OpUpdate, key, 0)
		}
		state, err = s.currentState(key, resp.Kvs)
		fresh = true
		return err
	}
	if state == nil {
		if err := read(ctx); err != nil {
			return err
		}
	}
	for {
		data, noop, err := s.decideUpdate(key, state, &spare, ignoreNotFound, preconditions, tryUpdate)
		if (err != nil || noop) && !fresh {
			// A refusal, or nothing to write, on the cached copy says nothing about the stored
			// one: decide again on what etcd holds.
			if err := read(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if noop {
			return s.result(state.data, dest, state.rev, key)
		}
		sealed, err := s.seal(data, key)
		if err != nil {
			return err
		}
		// An absent key has mod revision 0, so the same comparison also guards a create.
		rev := state.rev
		txnResp, retried, err := s.commit(ctx, func() clientv3.Txn {
			return s.client.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
				Then(clientv3.OpPut(key, unsafeString(sealed))).
				Else(clientv3.OpGet(key))
		})
		if err != nil {
			return s.interpret(ctx, err, storage.OpUpdate, key, 0)
		}
		if txnResp.Succeeded {
			return s.result(data, dest, txnResp.Header.Revision, key)
		}
		if kv := ownWrite(txnResp, sealed); retried && kv != nil {
			return s.result(data, dest, kv.ModRevision, key)
		}
		// Another writer got there first (or the cached copy was behind): retry on what is stored.
		if state, err = s.currentState(key, txnResp.Responses[0].GetResponseRange().Kvs); err != nil {
			return err
		}
		fresh = true
	}
}

// decideUpdate is one attempt's decision on state, without writing: the encoded new object, or
// noop when it encodes as the stored one, or the refusal (not found, a failed precondition,
// tryUpdate's error). *spare, a private copy of state.obj, is handed to tryUpdate once.
func (s *Store) decideUpdate(key string, state *current, spare *runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) (data []byte, noop bool, err error) {
	if !state.exists && !ignoreNotFound {
		return nil, false, withOp(storage.NewError(storage.ErrCodeNotFound, key, "", nil), storage.OpUpdate)
	}
	if err := checkPreconditions(key, preconditions, state.obj, false); err != nil {
		return nil, false, err
	}
	input := *spare
	if input == nil {
		input = state.obj.DeepCopyObject()
	}
	*spare = nil
	next, err := tryUpdate(input)
	if err != nil {
		return nil, false, err
	}
	data, err = s.encode(next)
	if err != nil {
		return nil, false, fmt.Errorf("update %s: %w", key, err)
	}
	return data, state.exists && !state.stale && bytes.Equal(data, state.data), nil
}

// cachedState is the state a cached object stands for: its revision and its codec bytes. The
// bytes are encoded from a copy, since cached is shared; that copy, its revision restored, is
// returned for the first attempt's tryUpdate. Whether etcd holds the value sealed by an older key
// is unknown, so an update that changes nothing is confirmed on the stored value.
func (s *Store) cachedState(cached runtime.Object) (*current, runtime.Object, error) {
	accessor, err := meta.Accessor(cached)
	if err != nil {
		return nil, nil, err
	}
	rv := accessor.GetResourceVersion()
	rev, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || rev <= 0 {
		return nil, nil, fmt.Errorf("cached object has no revision %q", rv)
	}
	spare := cached.DeepCopyObject()
	data, err := s.encode(spare)
	if err != nil {
		return nil, nil, err
	}
	spareMeta, err := meta.Accessor(spare)
	if err != nil {
		return nil, nil, err
	}
	spareMeta.SetResourceVersion(rv)
	return &current{obj: cached, data: data, rev: rev, exists: true}, spare, nil
}

// result decodes an update's stored bytes into dest, unless the caller passed none.
func (s *Store) result(data []byte, dest runtime.Object, rev int64, key string) error {
	if dest == nil {
		return nil
	}
	return s.decodePlain(data, dest, rev, key)
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc) error {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return s.interpret(ctx, err, storage.OpDelete, key, 0)
	}
	state, err := s.currentState(key, resp.Kvs)
	if err != nil {
		return err
	}
	for {
		if !state.exists {
			return withOp(storage.NewError(storage.ErrCodeNotFound, key, "", nil), storage.OpDelete)
		}
		if err := checkPreconditions(key, preconditions, state.obj, true); err != nil {
			return err
		}
		if validateDeletion != nil {
			if err := validateDeletion(ctx, state.obj.DeepCopyObject()); err != nil {
				return err
			}
		}
		rev := state.rev
		txnResp, retried, err := s.commit(ctx, func() clientv3.Txn {
			return s.client.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
				Then(clientv3.OpDelete(key)).
				Else(clientv3.OpGet(key))
		})
		if err != nil {
			return s.interpret(ctx, err, storage.OpDelete, key, 0)
		}
		if txnResp.Succeeded {
			// The last state carries the revision of its deletion, as watchers see it.
			return s.decodePlain(state.data, out, txnResp.Header.Revision, key)
		}
		if retried && len(txnResp.Responses[0].GetResponseRange().Kvs) == 0 {
			// Gone after a resend: the first attempt deleted it (or another deleter did, which
			// the caller cannot tell from its own). Its revision is not known; the response's
			// is at or after it.
			return s.decodePlain(state.data, out, txnResp.Header.Revision, key)
		}
		if state, err = s.currentState(key, txnResp.Responses[0].GetResponseRange().Kvs); err != nil {
			return err
		}
	}
}

// checkPreconditions reports a failed precondition as a Conflict. A stale resourceVersion on an
// update is the optimistic-lock conflict; on a delete, and for a uid, Kubernetes names the
// precondition in the message.
func checkPreconditions(key string, p *storage.Preconditions, obj runtime.Object, forDelete bool) error {
	if p == nil {
		return nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("check preconditions of %s: %w", key, err)
	}
	if p.UID != nil && *p.UID != accessor.GetUID() {
		e := storage.NewError(storage.ErrCodeConflict, key,
			fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, accessor.GetUID()), nil)
		e.Precondition = true
		return e
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != accessor.GetResourceVersion() {
		e := storage.NewError(storage.ErrCodeConflict, key,
			fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v",
				*p.ResourceVersion, accessor.GetResourceVersion()), nil)
		e.Precondition = forDelete
		return e
	}
	return nil
}

// Count implements storage.Interface.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	resp, err := s.client.Get(ctx, ensureSlash(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, s.interpret(ctx, err, storage.OpList, prefix, 0)
	}
	return resp.Count, nil
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	// Any linearizable read answers with the store's latest revision in its header.
	resp, err := s.client.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		return 0, s.interpret(ctx, err, storage.OpGet, "/", 0)
	}
	return resp.Header.Revision, nil
}

// RevisionAvailable implements storage.RevisionKeeper: a count-only read of one key at rev, which
// etcd refuses once rev is compacted.
func (s *Store) RevisionAvailable(ctx context.Context, rev int64) (bool, error) {
	_, err := s.client.Get(ctx, "/", clientv3.WithCountOnly(), clientv3.WithRev(rev))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return false, nil
	default:
		return false, s.interpret(ctx, err, storage.OpGet, "/", rev)
	}
}

var _ storage.RevisionKeeper = (*Store)(nil)

// Ready implements storage.Interface.
func (s *Store) Ready(ctx context.Context) error {
	_, err := s.CurrentRevision(ctx)
	return err
}

func (s *Store) encode(obj runtime.Object) ([]byte, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	// The revision is the key's, not part of the value.
	accessor.SetResourceVersion("")
	accessor.SetSelfLink("")
	var buf encodeBuffer
	if ea, ok := s.codec.(runtime.EncoderWithAllocator); ok {
		err = ea.EncodeWithAllocator(obj, &buf, &buf)
	} else {
		err = s.codec.Encode(obj, &buf)
	}
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return buf.out, nil
}

// encodeBuffer receives one encoding. It is the memory allocator for codecs that take one
// (protobuf does) and the writer they write to: bytes written from its own allocation are kept
// as they are, where a bytes.Buffer grew and copied them; anything else is copied, since a
// codec may reuse its own buffer after the write (encoding/json does).
type encodeBuffer struct {
	alloc []byte
	out   []byte
}

// Allocate implements runtime.MemoryAllocator with fresh memory each time.
func (b *encodeBuffer) Allocate(n uint64) []byte {
	b.alloc = make([]byte, n)
	return b.alloc
}

func (b *encodeBuffer) Write(p []byte) (int, error) {
	if b.out == nil && len(p) > 0 && len(b.alloc) > 0 && &p[0] == &b.alloc[0] {
		b.out = p
		return len(p), nil
	}
	b.out = append(b.out, p...)
	return len(p), nil
}

// unsafeString is data as a string without a copy. data must not change afterwards: the stored
// value is handed to etcd's client, which copies it again into its request.
func unsafeString(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	return unsafe.String(&data[0], len(data))
}

// seal transforms the codec's bytes into what etcd stores.
func (s *Store) seal(data []byte, key string) ([]byte, error) {
	if s.transformer == nil {
		return data, nil
	}
	sealed, err := s.transformer.TransformToStorage(data, key)
	if err != nil {
		return nil, fmt.Errorf("encrypt %s: %w", key, err)
	}
	return sealed, nil
}

// open transforms what etcd stores into the codec's bytes; stale reports a value sealed by an
// older key or provider.
func (s *Store) open(data []byte, key string) ([]byte, bool, error) {
	if s.transformer == nil {
		return data, false, nil
	}
	plain, stale, err := s.transformer.TransformFromStorage(data, key)
	if err != nil {
		return nil, false, storage.NewError(storage.ErrCodeInvalidObject, key, "", fmt.Errorf("decrypt: %w", err))
	}
	return plain, stale, nil
}

// decode fills into from the bytes etcd stores and stamps the revision as its resourceVersion.
func (s *Store) decode(data []byte, into runtime.Object, rev int64, key string) error {
	plain, _, err := s.open(data, key)
	if err != nil {
		return err
	}
	return s.decodePlain(plain, into, rev, key)
}

// decodePlain fills into from the codec's bytes and stamps the revision as its resourceVersion.
func (s *Store) decodePlain(data []byte, into runtime.Object, rev int64, key string) error {
	if err := runtime.SetZeroValue(into); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	_, gvk, err := s.codec.Decode(data, nil, into)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObject, key, "", err)
	}
	if gvk != nil {
		into.GetObjectKind().SetGroupVersionKind(*gvk)
	}
	accessor, err := meta.Accessor(into)
	if err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

// interpret turns an etcd client error into a storage error.
func (s *Store) interpret(ctx context.Context, err error, op, key string, requested int64) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s %s: %w", op, key, ctxErr)
	}
	var e *storage.Error
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		e = storage.NewError(storage.ErrCodeExpired, key, "", err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		e = storage.NewError(storage.ErrCodeTooLargeRevision, key, "", err)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clientTimeoutForRevision)
		defer cancel()
		if rev, revErr := s.CurrentRevision(rctx); revErr == nil {
			e.Revision = rev
		}
	case errors.Is(err, rpctypes.ErrNoSpace), errors.Is(err, rpctypes.ErrGRPCNoSpace):
		e = storage.NewError(storage.ErrCodeNoSpace, key, "", err)
	case isUnreachable(err):
		e = storage.NewError(storage.ErrCodeUnreachable, key, "", err)
	default:
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	e.Op = op
	e.Requested = requested
	return e
}

// clientTimeoutForRevision bounds the extra read that words a too-large-revision error.
const clientTimeoutForRevision = 2 * time.Second

func isUnreachable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	for _, unreachable := range []error{
		rpctypes.ErrNoLeader, rpctypes.ErrNotLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrStopped,
		rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrUnhealthy,
	} {
		if errors.Is(err, unreachable) {
			return true
		}
	}
	switch grpcstatus.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

func withOp(e *storage.Error, op string) *storage.Error {
	e.Op = op
	return e
}

func parseResourceVersion(rv string) (int64, error) {
	rev, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || rev < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", rv))
	}
	return rev, nil
}

func ensureSlash(prefix string) string {
	if strings.HasSuffix(prefix, "/") {
		return prefix
	}
	return prefix + "/"
}

// bookmarkObject is an object of the store's type carrying only a resourceVersion.
func (s *Store) bookmarkObject(rev int64) (runtime.Object, error) {
	obj := s.newFunc()
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}
