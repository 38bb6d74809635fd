package etcd3

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
)

// listPlan is where and at which revision a list reads.
type listPlan struct {
	keyPrefix string
	startKey  string
	// readRev is the revision to read at; 0 means the latest.
	readRev int64
	// minRev is the least revision the caller accepts (resourceVersionMatch NotOlderThan).
	minRev int64
	// serializable allows the answer from any member's state (resourceVersion "0").
	serializable bool
	// continuing is true when a continue token pinned the revision.
	continuing bool
}

func planList(prefix string, opts storage.ListOptions) (listPlan, error) {
	p := listPlan{keyPrefix: prefix}
	if opts.Recursive {
		p.keyPrefix = ensureSlash(prefix)
	}
	p.startKey = p.keyPrefix
	pred := opts.Predicate
	if pred.Continue != "" {
		if !opts.Recursive {
			return p, apierrors.NewBadRequest("continue key is not supported on a non-recursive list")
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return p, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		startKey, rev, err := storage.DecodeContinue(pred.Continue, p.keyPrefix)
		if err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		p.startKey = startKey
		p.continuing = true
		if rev > 0 {
			p.readRev = rev
		}
		return p, nil
	}
	switch opts.ResourceVersion {
	case "":
		if opts.ResourceVersionMatch != "" {
			return p, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		}
		return p, nil
	case "0":
		p.serializable = true
		return p, nil
	}
	rev, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return p, err
	}
	switch metav1.ResourceVersionMatch(opts.ResourceVersionMatch) {
	case metav1.ResourceVersionMatchExact:
		p.readRev = rev
	case metav1.ResourceVersionMatchNotOlderThan, "":
		p.minRev = rev
	default:
		return p, apierrors.NewBadRequest(fmt.Sprintf("unknown resourceVersionMatch value: %v", opts.ResourceVersionMatch))
	}
	return p, nil
}

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions, listObj runtime.Object) error {
	listAccessor, err := meta.ListAccessor(listObj)
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	plan, err := planList(prefix, opts)
	if err != nil {
		return err
	}
	pred := opts.Predicate
	limit := pred.Limit
	paging := opts.Recursive && limit > 0

	var ops []clientv3.OpOption
	if opts.Recursive {
		ops = append(ops, clientv3.WithRange(clientv3.GetPrefixRangeEnd(plan.keyPrefix)))
	}
	if plan.readRev > 0 {
		ops = append(ops, clientv3.WithRev(plan.readRev))
	}
	if plan.serializable {
		ops = append(ops, clientv3.WithSerializable())
	}
	pageSize := limit
	if paging {
		ops = append(ops, clientv3.WithLimit(pageSize))
	}

	var (
		items    []runtime.Object
		readRev  = plan.readRev
		key      = plan.startKey
		lastKey  string
		hasMore  bool
		resp     *clientv3.GetResponse
		consumed int64 // keys of the last response that went into this page
	)
	for {
		resp, err = s.client.Get(ctx, key, ops...)
		if err != nil {
			return s.listError(ctx, err, plan)
		}
		if readRev == 0 {
			// Every further page reads at the revision of the first.
			readRev = resp.Header.Revision
			ops = append(ops, clientv3.WithRev(readRev))
		}
		if plan.minRev > readRev {
			e := storage.NewError(storage.ErrCodeTooLargeRevision, plan.keyPrefix, "", nil)
			e.Op, e.Requested, e.Revision = storage.OpList, plan.minRev, readRev
			return e
		}
		hasMore = resp.More
		consumed = 0
		for i, kv := range resp.Kvs {
			if paging && int64(len(items)) == limit {
				hasMore = true
				break
			}
			consumed = int64(i + 1)
			lastKey = string(kv.Key)
			obj := s.newFunc()
			if err := s.decode(kv.Value, obj, kv.ModRevision, lastKey); err != nil {
				return err
			}
			matches, err := pred.Matches(obj)
			if err != nil {
				return fmt.Errorf("list %s: evaluate selectors on %s: %w", plan.keyPrefix, lastKey, err)
			}
			if matches {
				items = append(items, obj)
			}
		}
		if !paging || !hasMore || int64(len(items)) == limit {
			break
		}
		// Selectors dropped items: read on after the last key, in growing pages.
		key = lastKey + "\x00"
		if pageSize < maxPageSize {
			pageSize = min(pageSize*2, maxPageSize)
			ops = append(ops, clientv3.WithLimit(pageSize))
		}
	}

	if err := meta.SetList(listObj, items); err != nil {
		return fmt.Errorf("list %s: %w", plan.keyPrefix, err)
	}
	listAccessor.SetResourceVersion(strconv.FormatInt(readRev, 10))
	listAccessor.SetContinue("")
	listAccessor.SetRemainingItemCount(nil)
	if paging && hasMore {
		token, err := storage.EncodeContinue(lastKey+"\x00", plan.keyPrefix, readRev)
		if err != nil {
			return fmt.Errorf("list %s: %w", plan.keyPrefix, err)
		}
		listAccessor.SetContinue(token)
		// Without selectors every remaining key is a remaining item, and etcd counted them.
		if pred.Empty() {
			remaining := resp.Count - consumed
			listAccessor.SetRemainingItemCount(&remaining)
		}
	}
	return nil
}

func (s *Store) listError(ctx context.Context, err error, plan listPlan) error {
	e := s.interpret(ctx, err, storage.OpList, plan.keyPrefix, plan.readRev)
	if !plan.continuing || !storage.IsExpired(e) {
		return e
	}
	// The pinned revision is gone: offer to continue from the same key at the latest revision.
	se := e.(*storage.Error)
	token, tokenErr := storage.EncodeContinue(plan.startKey, plan.keyPrefix, -1)
	if tokenErr != nil {
		se.Detail = storage.DetailContinueExpired
		return se
	}
	se.Continue = token
	return se
}
