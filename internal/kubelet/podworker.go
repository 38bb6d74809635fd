package kubelet

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// podWorker is the goroutine that syncs one pod. Wake-ups coalesce: many
// events while a sync runs cause one more sync.
type podWorker struct {
	wake chan struct{}
	// errorDelay grows while syncs fail, so a broken pod does not spin.
	errorDelay time.Duration
}

// enqueue wakes the pod's worker, starting one if needed.
func (k *Kubelet) enqueue(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx == nil || k.ctx.Err() != nil || k.workersClosed {
		return
	}
	w, ok := k.workers[uid]
	if !ok {
		w = &podWorker{wake: make(chan struct{}, 1)}
		k.workers[uid] = w
		k.workerWG.Add(1)
		go k.runWorker(k.ctx, uid, w)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// enqueueAfter wakes the pod's worker after d (a back-off expiring).
func (k *Kubelet) enqueueAfter(uid types.UID, d time.Duration) {
	k.clock.AfterFunc(d, func() { k.enqueue(uid) })
}

func (k *Kubelet) runWorker(ctx context.Context, uid types.UID, w *podWorker) {
	defer k.workerWG.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		result := k.syncPod(ctx, uid)
		if result.err != nil && ctx.Err() == nil {
			w.errorDelay = min(max(2*w.errorDelay, 500*time.Millisecond), 30*time.Second)
			k.log.Error("pod sync failed", "uid", uid, "err", result.err, "retryAfter", w.errorDelay)
			k.enqueueAfter(uid, w.errorDelay)
		} else {
			w.errorDelay = 0
		}
		if result.requeueAfter > 0 {
			k.enqueueAfter(uid, result.requeueAfter)
		}
		if result.finished {
			k.mu.Lock()
			select {
			case <-w.wake:
				// Woken while finishing: the pod may be back (same UID cannot
				// return, but a tombstone may have been replaced); keep going.
				k.mu.Unlock()
				w.wake <- struct{}{}
				continue
			default:
			}
			delete(k.workers, uid)
			k.mu.Unlock()
			k.forgetPod(uid)
			return
		}
	}
}

// waitWorkers closes the group to new workers, then waits for those running.
func (k *Kubelet) waitWorkers() {
	k.mu.Lock()
	k.workersClosed = true
	k.mu.Unlock()
	k.workerWG.Wait()
}
