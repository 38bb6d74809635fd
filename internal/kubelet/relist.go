package kubelet

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// relistLoop lists the runtime's containers every RelistPeriod and wakes the
// workers of pods whose containers changed state (a process exited, a
// container vanished): the runtime sends no events the kubelet could
// subscribe to through CRI v1 on containerd 1.6.
func (k *Kubelet) relistLoop(ctx context.Context) {
	ticker := k.clock.NewTicker(k.cfg.RelistPeriod)
	defer ticker.Stop()
	previous := map[string]containerSnapshot{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		current, err := k.relist(ctx)
		if err != nil {
			if ctx.Err() == nil {
				k.log.Error("relist containers", "err", err)
			}
			continue
		}
		changed := map[types.UID]bool{}
		for id, now := range current {
			if before, ok := previous[id]; !ok || before.state != now.state {
				changed[now.pod] = true
			}
		}
		for id, before := range previous {
			if _, ok := current[id]; !ok {
				changed[before.pod] = true
			}
		}
		previous = current
		for uid := range changed {
			k.enqueue(uid)
		}
	}
}

type containerSnapshot struct {
	pod   types.UID
	state runtimeapi.ContainerState
}

func (k *Kubelet) relist(ctx context.Context) (map[string]containerSnapshot, error) {
	containers, err := k.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labelManagedBy: managedByKubelet}})
	if err != nil {
		return nil, err
	}
	out := make(map[string]containerSnapshot, len(containers))
	for _, c := range containers {
		out[c.Id] = containerSnapshot{pod: types.UID(c.Labels[labelPodUID]), state: c.State}
	}
	return out, nil
}
