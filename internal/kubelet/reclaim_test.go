package kubelet

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestDeletedPodIsReclaimedBeforeItsObjectGoes: when the kubelet deletes a
// terminated pod's object, its sandbox and its data dir (volumes) are gone
// already, so a client that saw the pod go may stop the node at once.
func TestDeletedPodIsReclaimedBeforeItsObjectGoes(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("doomed").obj())
	pod := h.waitPod("default", "doomed", "running", podRunning)
	dataDir := h.kubelet.podDataDir(pod.UID)
	if _, err := os.Stat(dataDir); err != nil {
		t.Fatalf("running pod has no data dir: %v", err)
	}

	type leftovers struct {
		sandboxes int
		dataDir   bool
	}
	atDelete := make(chan leftovers, 1)
	h.client.PrependReactor("delete", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if d, ok := action.(k8stesting.DeleteActionImpl); ok && d.DeleteOptions.GracePeriodSeconds != nil && *d.DeleteOptions.GracePeriodSeconds == 0 {
			all, _ := h.runtime.SandboxCount()
			_, err := os.Stat(dataDir)
			select {
			case atDelete <- leftovers{sandboxes: all, dataDir: err == nil}:
			default:
			}
		}
		return false, nil, nil
	})
	now := metav1.NewTime(h.clock.Now())
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = ptr.To[int64](2)
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("pod deleted by the kubelet", func() bool { return h.pod("default", "doomed") == nil })
	got := <-atDelete
	if got.sandboxes != 0 || got.dataDir {
		t.Errorf("when the pod object was deleted: %d sandboxes left, data dir left %v; want nothing", got.sandboxes, got.dataDir)
	}
}
