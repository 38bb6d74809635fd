package apiserver

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/storage"
)

// ListWatch lists and watches a resource straight from the server's store, for informer caches
// inside the API server (the admission plugins' webhook configurations and policies). Going
// through the store rather than a loopback client keeps admission free of the server's own
// authentication, authorization and HTTP round trips, and the watch shares the resource's one
// etcd watch through the watch cache.
func (s *Server) ListWatch(gr schema.GroupResource) (*cache.ListWatch, error) {
	h := s.handlerForGroupResource(gr)
	if h == nil {
		return nil, fmt.Errorf("list-watch %s: %w", gr, apierrors.NewNotFound(gr, ""))
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return h.st.List(ctx, "", storage.ListOptions{Recursive: true, ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: string(opts.ResourceVersionMatch)})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			// client-go's reflector streams its initial list (sendInitialEvents), which the store serves.
			return h.st.Watch(ctx, "", "", storage.ListOptions{
				Recursive: true, ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: string(opts.ResourceVersionMatch),
				ProgressNotify: opts.AllowWatchBookmarks, SendInitialEvents: opts.SendInitialEvents,
			})
		},
		DisableChunking: true,
	}, nil
}
