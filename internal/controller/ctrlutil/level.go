package ctrlutil

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// InformerFactory is what WatchLevel needs of a shared informer factory: client-go's and the
// generated ones of other API groups (the Gateway API's) alike.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
}

// WatchLevel starts the factories with every informer's events poking the returned channel
// (one poke already in it) and waits for their caches; the caller shuts the factories down. It
// is for controllers that rebuild one whole result from their caches (a route table) rather than
// reconcile per key: any number of changes fold into the next rebuild.
func WatchLevel(ctx context.Context, factories []InformerFactory, infs ...cache.SharedIndexInformer) (chan struct{}, error) {
	dirty := make(chan struct{}, 1)
	nudge := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { Poke(dirty) },
		UpdateFunc: func(any, any) { Poke(dirty) },
		DeleteFunc: func(any) { Poke(dirty) },
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(nudge); err != nil {
			return nil, err
		}
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return nil, fmt.Errorf("%v did not sync", typ)
			}
		}
	}
	Poke(dirty)
	return dirty, nil
}

// RunLevel runs sync at every poke of dirty until ctx ends; a failed sync runs again after
// retry (changes in between fold into that run).
func RunLevel(ctx context.Context, dirty chan struct{}, clk clock.Clock, retry time.Duration, sync func() error, log *slog.Logger) error {
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-dirty:
		case <-again:
		}
		again = nil
		if err := sync(); err != nil {
			log.Warn("sync failed; retrying", "err", err, "retry", retry)
			again = clk.After(retry)
		}
	}
}

// Poke marks c dirty without blocking: one pending poke stands for any number.
func Poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
