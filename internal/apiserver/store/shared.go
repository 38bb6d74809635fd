package store

import (
	"context"

	"github.com/skiff-sh/skiff/internal/storage"
)

// ListShared answers a list with the storage's own objects when the storage can serve it from
// memory (storage.SharedLister, the watch cache); served is false otherwise, and the caller uses
// List. The items must not be mutated.
func (s *Store) ListShared(ctx context.Context, namespace string, opts storage.ListOptions) (*storage.SharedList, bool, error) {
	lister, ok := s.storage.(storage.SharedLister)
	if !ok {
		return nil, false, nil
	}
	if opts.Predicate.Attrs == nil {
		opts.Predicate.Attrs = s.Attrs
	}
	list, served, err := lister.ListShared(ctx, s.collectionPrefix(namespace), opts)
	if err != nil {
		return nil, false, s.apiError(err, "")
	}
	return list, served, nil
}
