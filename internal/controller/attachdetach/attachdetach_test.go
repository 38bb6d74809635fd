package attachdetach

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

type world struct {
	env *ctrltest.Env
	c   *Controller
}

func newWorld(t *testing.T, objs ...runtime.Object) *world {
	t.Helper()
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	f := env.Factory
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Pod:
			ctrltest.Seed(t, f.Core().V1().Pods().Informer(), o)
		case *corev1.Node:
			ctrltest.Seed(t, f.Core().V1().Nodes().Informer(), o)
		case *corev1.PersistentVolumeClaim:
			ctrltest.Seed(t, f.Core().V1().PersistentVolumeClaims().Informer(), o)
		case *corev1.PersistentVolume:
			ctrltest.Seed(t, f.Core().V1().PersistentVolumes().Informer(), o)
		case *storagev1.VolumeAttachment:
			ctrltest.Seed(t, f.Storage().V1().VolumeAttachments().Informer(), o)
		case *storagev1.CSIDriver:
			ctrltest.Seed(t, f.Storage().V1().CSIDrivers().Informer(), o)
		}
	}
	return &world{env: env, c: c}
}

func (w *world) sync(t *testing.T, node string) []clienttesting.Action {
	t.Helper()
	if err := w.c.Sync(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	return w.env.Writes()
}

// TestSyncAttachesThenDetaches follows one volume through its life on a node: attached for the pod,
// listed on the node once the attacher says so, kept while mounted after the pod is gone, then
// taken off the node's list before its attachment is deleted.
func TestSyncAttachesThenDetaches(t *testing.T) {
	pv, pvc := csiVolume("pv-data", "data", corev1.ReadWriteOnce), boundClaim("data", "pv-data")
	pod := withClaim(ctrltest.MakePod("web").Node("n1").Running().Obj(), "data")
	name := want("pv-data", false).AttachmentName("n1")

	w := newWorld(t, node(), pv, pvc, pod)
	writes := w.sync(t, "n1")
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"create volumeattachments " + name}) {
		t.Fatalf("attach: %q", got)
	}
	va := writes[0].(clienttesting.CreateAction).GetObject().(*storagev1.VolumeAttachment)
	if va.Spec.Attacher != driver || va.Spec.NodeName != "n1" || *va.Spec.Source.PersistentVolumeName != "pv-data" {
		t.Fatalf("attachment %+v", va.Spec)
	}

	attached := attachment("pv-data", "n1", true).VA
	w = newWorld(t, node(inUse("pv-data")), pv, pvc, pod, attached)
	writes = w.sync(t, "n1")
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"patch nodes/status n1"}) {
		t.Fatalf("attached: %q", got)
	}
	if got := string(writes[0].(clienttesting.PatchAction).GetPatch()); !strings.Contains(got, `"name":"kubernetes.io/csi/hostpath.csi.k8s.io^h-pv-data"`) {
		t.Fatalf("status patch %s", got)
	}

	// The pod is gone but the kubelet still has the volume mounted: nothing yet.
	listed := node(inUse("pv-data"))
	listed.Status.VolumesAttached = []corev1.AttachedVolume{{Name: attachment("pv-data", "n1", true).Unique}}
	w = newWorld(t, listed, pv, pvc, attached)
	if got := ctrltest.Describe(w.sync(t, "n1")); len(got) != 0 {
		t.Fatalf("mounted volume detached: %q", got)
	}
	// Unmounted: off the node's list first, then detached.
	listed.Status.VolumesInUse = nil
	w = newWorld(t, listed, pv, pvc, attached)
	writes = w.sync(t, "n1")
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"patch nodes/status n1", "delete volumeattachments " + name}) {
		t.Fatalf("detach: %q", got)
	}
	var patch map[string]map[string]any
	if err := json.Unmarshal(writes[0].(clienttesting.PatchAction).GetPatch(), &patch); err != nil {
		t.Fatal(err)
	}
	if v, ok := patch["status"]["volumesAttached"]; !ok || v != nil {
		t.Fatalf("volumesAttached not cleared: %v", patch)
	}
}

// TestSyncMultiAttach: a single-node volume attached to another node is not attached here; its
// pods are told once, not at every sync.
func TestSyncMultiAttach(t *testing.T) {
	pv, pvc := csiVolume("pv-data", "data", corev1.ReadWriteOnce), boundClaim("data", "pv-data")
	pod := withClaim(ctrltest.MakePod("web").Node("n1").Running().Obj(), "data")
	w := newWorld(t, node(), pv, pvc, pod, attachment("pv-data", "n2", true).VA)
	for range 2 {
		if got := ctrltest.Describe(w.sync(t, "n1")); len(got) != 0 {
			t.Fatalf("writes %q", got)
		}
	}
	events := w.env.Events()
	if len(events) != 1 || !strings.Contains(events[0], "Multi-Attach error for volume \"pv-data\"") {
		t.Fatalf("events %q", events)
	}
}

// TestSyncLeavesForeignAttachments: an attachment whose volume does not exist (made by hand, or by
// a test of the API) is not this controller's to delete.
func TestSyncLeavesForeignAttachments(t *testing.T) {
	foreign := attachment("pv-missing", "n1", true).VA
	w := newWorld(t, node(), foreign)
	if got := ctrltest.Describe(w.sync(t, "n1")); len(got) != 0 {
		t.Fatalf("writes %q", got)
	}
}

// TestSyncDetachesAfterVolumeDeleted: an attachment the controller saw with its volume is still
// detached once the kubelet unmounts it when the volume is deleted meanwhile, as upstream's actual
// state of the world remembers it. A driver without ControllerPublishVolume (csi-hostpath as
// deployed) gets its attachments marked attached with no finalizer on them or the volume, so
// deleting the claim right after its last pod deletes the volume before the kubelet's
// volumesInUse drops it (TestCSIHostpathUser found the attachment left for good).
func TestSyncDetachesAfterVolumeDeleted(t *testing.T) {
	pv, pvc := csiVolume("pv-data", "data", corev1.ReadWriteOnce), boundClaim("data", "pv-data")
	attached := attachment("pv-data", "n1", true)
	listed := node(inUse("pv-data"))
	listed.Status.VolumesAttached = []corev1.AttachedVolume{{Name: attached.Unique}}
	w := newWorld(t, listed, pv, pvc, attached.VA)
	if got := ctrltest.Describe(w.sync(t, "n1")); len(got) != 0 {
		t.Fatalf("mounted volume detached: %q", got)
	}
	if err := w.env.Factory.Core().V1().PersistentVolumes().Informer().GetStore().Delete(pv); err != nil {
		t.Fatal(err)
	}
	unmounted := listed.DeepCopy()
	unmounted.Status.VolumesInUse = nil
	if err := w.env.Factory.Core().V1().Nodes().Informer().GetStore().Update(unmounted); err != nil {
		t.Fatal(err)
	}
	want := []string{"patch nodes/status n1", "delete volumeattachments " + attached.VA.Name}
	if got := ctrltest.Describe(w.sync(t, "n1")); !slices.Equal(got, want) {
		t.Fatalf("detach after the volume went: %q, want %q", got, want)
	}
}

// TestNodeInputsChanged: node updates that change what Decide reads wake the controller, heartbeats
// do not.
func TestNodeInputsChanged(t *testing.T) {
	base := node(inUse("a"))
	for _, tt := range []struct {
		name string
		mod  func(*corev1.Node)
		want bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime.Time = ctrltest.Epoch() }, false},
		{"label", func(n *corev1.Node) { n.Labels = map[string]string{"x": "y"} }, false},
		{"volume unmounted", func(n *corev1.Node) { n.Status.VolumesInUse = nil }, true},
		{"volume mounted", inUse("b"), true},
		{"not Ready", notReady, true},
		{"out of service", outOfService, true},
		{"no longer managed", unmanaged, true},
		{"volumesAttached overwritten", func(n *corev1.Node) {
			n.Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/x^y"}}
		}, true},
	} {
		cur := base.DeepCopy()
		tt.mod(cur)
		if got := NodeInputsChanged(base, cur); got != tt.want {
			t.Errorf("%s: NodeInputsChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSyncAttachError: the attacher's attachError reaches the volume's pods once, as a
// FailedAttachVolume event; a new error is told again.
func TestSyncAttachError(t *testing.T) {
	pv, pvc := csiVolume("pv-data", "data", corev1.ReadWriteOnce), boundClaim("data", "pv-data")
	pod := withClaim(ctrltest.MakePod("web").Node("n1").Running().Obj(), "data")
	va := attachment("pv-data", "n1", false).VA
	va.Status.AttachError = &storagev1.VolumeError{Message: "rpc error: code = NotFound desc = no such disk"}
	w := newWorld(t, node(), pv, pvc, pod, va)
	for range 2 {
		if got := ctrltest.Describe(w.sync(t, "n1")); len(got) != 0 {
			t.Fatalf("writes %q", got)
		}
	}
	events := w.env.Events()
	if len(events) != 1 || events[0] != `Warning FailedAttachVolume AttachVolume.Attach failed for volume "pv-data" : rpc error: code = NotFound desc = no such disk` {
		t.Fatalf("events %q", events)
	}
	next := va.DeepCopy()
	next.Status.AttachError.Message = "rpc error: code = Internal desc = busy"
	if err := w.env.Factory.Storage().V1().VolumeAttachments().Informer().GetIndexer().Update(next); err != nil {
		t.Fatal(err)
	}
	w.sync(t, "n1")
	if events := w.env.Events(); len(events) != 1 || !strings.Contains(events[0], "busy") {
		t.Fatalf("new error: events %q", events)
	}
}
