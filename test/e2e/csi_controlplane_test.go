package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/simnode"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// fakeCSIDriver is the name of the CSI driver whose controller side fakeCSIController plays.
const fakeCSIDriver = "fake.csi.skiff.test"

// fakeCSIController plays a CSI driver's external-provisioner and external-attacher against the
// cluster as those sidecars do: it provisions a volume for every claim annotated with its name
// (once the scheduler picked a node for a WaitForFirstConsumer class), deletes Released volumes of
// the Delete policy, and attaches (finalizer, status.attached) and detaches (drops the finalizer)
// its VolumeAttachments. It looks every 200ms until ctx ends.
type fakeCSIController struct {
	client kubernetes.Interface
}

func (f fakeCSIController) run(ctx context.Context, t *testing.T) {
	for {
		if err := f.step(ctx); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
			t.Logf("fake CSI controller: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (f fakeCSIController) step(ctx context.Context) error {
	if err := f.provision(ctx); err != nil {
		return err
	}
	if err := f.deleteReleased(ctx); err != nil {
		return err
	}
	return f.attach(ctx)
}

func (f fakeCSIController) provision(ctx context.Context) error {
	claims, err := f.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if pvc.Annotations["volume.kubernetes.io/storage-provisioner"] != fakeCSIDriver || pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil {
			continue
		}
		class, err := f.client.StorageV1().StorageClasses().Get(ctx, *pvc.Spec.StorageClassName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer &&
			pvc.Annotations["volume.kubernetes.io/selected-node"] == "" {
			continue
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(pvc.UID), Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": fakeCSIDriver}},
			Spec: corev1.PersistentVolumeSpec{
				AccessModes: pvc.Spec.AccessModes, StorageClassName: class.Name,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: fakeCSIDriver, VolumeHandle: "vol-" + string(pvc.UID)}},
				ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion},
			},
		}
		if _, err := f.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func (f fakeCSIController) deleteReleased(ctx context.Context) error {
	volumes, err := f.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, pv := range volumes.Items {
		if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == fakeCSIDriver && pv.Status.Phase == corev1.VolumeReleased && pv.DeletionTimestamp == nil {
			if err := f.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

func (f fakeCSIController) attach(ctx context.Context) error {
	const finalizer = "external-attacher/fake-csi-skiff-test"
	vas, err := f.client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range vas.Items {
		va := &vas.Items[i]
		if va.Spec.Attacher != fakeCSIDriver {
			continue
		}
		switch {
		case va.DeletionTimestamp != nil && slices.Contains(va.Finalizers, finalizer):
			va.Finalizers = slices.DeleteFunc(va.Finalizers, func(s string) bool { return s == finalizer })
			if _, err := f.client.StorageV1().VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}); err != nil {
				return err
			}
		case va.DeletionTimestamp == nil && !slices.Contains(va.Finalizers, finalizer):
			va.Finalizers = append(va.Finalizers, finalizer)
			if _, err := f.client.StorageV1().VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}); err != nil {
				return err
			}
		case va.DeletionTimestamp == nil && !va.Status.Attached:
			va.Status.Attached = true
			if _, err := f.client.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestCSIControlPlane: the control plane's side of a CSI driver, with a fake external-provisioner
// and external-attacher in the test and a simulated node whose "kubelet" reports mounts by hand.
// A WaitForFirstConsumer claim is handed to the driver's provisioner once the scheduler picked the
// node, bound, and attached there (a VolumeAttachment named as upstream names it, the node's
// volumesAttached); NodeVolumeLimits holds a second pod back while the CSINode's count is used up;
// a volume whose pod is gone stays attached while the node reports it in use, then is detached;
// a generic ephemeral volume's claim is made for its pod; a claim grows only if its class allows;
// a ReadWriteOncePod claim serves one pod, which a higher-priority pod preempts.
func TestCSIControlPlane(t *testing.T) {
	c := newCluster(t)
	c.startSimNodes(t, simnode.Config{Nodes: 1, NamePrefix: "csi-", HeartbeatInterval: 2 * time.Second})
	root := ctl{c: c, t: t}
	root.eventually(60*time.Second, func() error { _, err := root.try("get", "node", "csi-0"); return err })
	node := "csi-0"
	root.run("annotate", "node", node, volumeutil.AnnControllerManagedAttachDetach+"=true")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fakeCSIController{client: c.clientset(t)}.run(ctx, t)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	root.apply(`apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ` + fakeCSIDriver + `
spec:
  attachRequired: true
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fake-wffc
provisioner: ` + fakeCSIDriver + `
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fake-expand
provisioner: ` + fakeCSIDriver + `
allowVolumeExpansion: true
`)
	k := root.namespace("csi")
	podWithClaim := func(name, claim string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %[2]s
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fake-wffc
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  containers:
  - {name: app, image: registry.example/app:v1, volumeMounts: [{name: data, mountPath: /data}]}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: %[2]s}}
`, name, claim)
	}
	// attachmentOf is the VolumeAttachment name and unique volume name of a bound claim's volume.
	attachmentOf := func(claim string) (string, corev1.UniqueVolumeName) {
		pv := k.jsonpath("{.spec.volumeName}", "pvc", claim)
		handle := k.jsonpath("{.spec.csi.volumeHandle}", "pv", pv)
		return volumeutil.AttachmentName(handle, fakeCSIDriver, node), volumeutil.CSIUniqueVolumeName(fakeCSIDriver, handle)
	}
	setInUse := func(volumes ...corev1.UniqueVolumeName) {
		list := `[]`
		if len(volumes) > 0 {
			list = `["` + strings.Join(slicesOf(volumes), `","`) + `"]`
		}
		root.run("patch", "node", node, "--subresource=status", "--type=merge", "-p", `{"status":{"volumesInUse":`+list+`}}`)
	}

	// Provisioned by the driver on the scheduler's node, bound, attached.
	k.apply(podWithClaim("web", "data"))
	k.run("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s")
	k.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/web", "--timeout=60s")
	if got := k.jsonpath(`{.metadata.annotations.volume\.kubernetes\.io/storage-provisioner} {.metadata.annotations.volume\.kubernetes\.io/selected-node}`, "pvc", "data"); got != fakeCSIDriver+" "+node {
		t.Fatalf("claim annotations %q, want the driver and the node", got)
	}
	dataVA, dataVolume := attachmentOf("data")
	root.run("wait", "--for=jsonpath={.status.attached}=true", "volumeattachment/"+dataVA, "--timeout=60s")
	if got := root.jsonpath("{.spec.attacher} {.spec.nodeName} {.spec.source.persistentVolumeName}", "volumeattachment", dataVA); got != fakeCSIDriver+" "+node+" "+k.jsonpath("{.spec.volumeName}", "pvc", "data") {
		t.Fatalf("attachment spec %q", got)
	}
	root.eventually(30*time.Second, func() error {
		if got := root.jsonpath("{.status.volumesAttached[*].name}", "node", node); got != string(dataVolume) {
			return fmt.Errorf("node volumesAttached %q, want %q", got, dataVolume)
		}
		return nil
	})

	// The class does not allow expansion.
	out, err := k.try("patch", "pvc", "data", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	if err == nil || !strings.Contains(out, "only dynamically provisioned pvc can be resized") {
		t.Fatalf("growth without allowVolumeExpansion: err %v\n%s", err, out)
	}

	// The node takes one volume of the driver: a second pod waits.
	root.apply(`apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: ` + node + `
spec:
  drivers:
  - {name: ` + fakeCSIDriver + `, nodeID: ` + node + `, allocatable: {count: 1}}
`)
	k.apply(podWithClaim("second", "more"))
	k.eventually(60*time.Second, func() error {
		events := k.run("get", "events", "--field-selector", "involvedObject.name=second", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "exceed max volume count") {
			return fmt.Errorf("no FailedScheduling for the volume limit yet: %q", events)
		}
		return nil
	})

	// The pod goes; the kubelet still has the volume mounted, so it stays attached.
	setInUse(dataVolume)
	k.run("delete", "pod", "web", "--wait=true", "--timeout=60s")
	for range 8 {
		if _, err := root.try("get", "volumeattachment", dataVA); err != nil {
			t.Fatalf("volume still in use was detached: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if phase := k.jsonpath("{.status.phase}", "pod", "second"); phase != "Pending" {
		t.Fatalf("second pod is %s while the node's one attachment is taken", phase)
	}
	// Unmounted: detached, off the node's list, and the waiting pod gets the room.
	setInUse()
	root.eventually(60*time.Second, func() error {
		if out, err := root.try("get", "volumeattachment", dataVA); err == nil {
			return fmt.Errorf("attachment still there:\n%s", out)
		}
		return nil
	})
	k.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/second", "--timeout=60s")
	moreVA, _ := attachmentOf("more")
	root.run("wait", "--for=jsonpath={.status.attached}=true", "volumeattachment/"+moreVA, "--timeout=60s")
	root.run("delete", "csinode", node)

	// A generic ephemeral volume: its claim is made for the pod, provisioned, bound and attached; it
	// may grow, as its class allows expansion.
	k.apply(`apiVersion: v1
kind: Pod
metadata:
  name: eph
spec:
  containers:
  - {name: app, image: registry.example/app:v1, volumeMounts: [{name: scratch, mountPath: /scratch}]}
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        metadata: {labels: {made-for: eph}}
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: fake-expand
          resources: {requests: {storage: 1Gi}}
`)
	k.eventually(60*time.Second, func() error {
		_, err := k.try("get", "pvc", "eph-scratch")
		return err
	})
	if got := k.jsonpath("{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.metadata.labels.made-for}", "pvc", "eph-scratch"); got != "Pod/eph eph" {
		t.Fatalf("ephemeral claim owner and labels %q", got)
	}
	k.run("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/eph-scratch", "--timeout=60s")
	k.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/eph", "--timeout=60s")
	ephVA, _ := attachmentOf("eph-scratch")
	root.run("wait", "--for=jsonpath={.status.attached}=true", "volumeattachment/"+ephVA, "--timeout=60s")
	k.run("patch", "pvc", "eph-scratch", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)

	// A ReadWriteOncePod claim serves one pod: a higher-priority pod preempts its user, a third
	// pod waits.
	root.apply(`apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: csi-e2e-high
value: 1000
`)
	t.Cleanup(func() { _, _ = root.try("delete", "priorityclass", "csi-e2e-high") })
	soloPod := func(name, priority string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  priorityClassName: %q
  containers:
  - {name: app, image: registry.example/app:v1, volumeMounts: [{name: data, mountPath: /data}]}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: solo}}
`, name, priority)
	}
	k.apply(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: solo
spec:
  accessModes: [ReadWriteOncePod]
  storageClassName: fake-expand
  resources: {requests: {storage: 1Gi}}
`)
	k.run("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/solo", "--timeout=60s")
	k.apply(soloPod("solo-a", ""))
	k.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/solo-a", "--timeout=60s")
	k.apply(soloPod("solo-b", "csi-e2e-high"))
	k.run("wait", "--for=delete", "pod/solo-a", "--timeout=60s")
	k.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/solo-b", "--timeout=60s")
	k.apply(soloPod("solo-c", ""))
	k.eventually(60*time.Second, func() error {
		events := k.run("get", "events", "--field-selector", "involvedObject.name=solo-c", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "ReadWriteOncePod access mode") {
			return fmt.Errorf("no FailedScheduling for the ReadWriteOncePod claim yet: %q", events)
		}
		return nil
	})
	if phase := k.jsonpath("{.status.phase}", "pod", "solo-c"); phase != "Pending" {
		t.Fatalf("third pod of a ReadWriteOncePod claim is %s", phase)
	}

	// Everything deleted: no attachment and no volume left.
	k.run("delete", "pod", "--all", "--wait=true", "--timeout=60s")
	k.run("delete", "pvc", "--all", "--wait=true", "--timeout=60s")
	root.eventually(60*time.Second, func() error {
		vas := root.run("get", "volumeattachments", "-o", "name")
		pvs := root.run("get", "pv", "-o", "name")
		if strings.TrimSpace(vas+pvs) != "" {
			return fmt.Errorf("left over:\n%s%s", vas, pvs)
		}
		return nil
	})
	if got := root.jsonpath("{.status.volumesAttached}", "node", node); got != "" {
		t.Fatalf("node still lists attached volumes: %s", got)
	}
}

func slicesOf(v []corev1.UniqueVolumeName) []string {
	out := make([]string, len(v))
	for i, n := range v {
		out[i] = string(n)
	}
	return out
}
