package pvprotection

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

const finalizer = volumeutil.PVProtectionFinalizer

func volume(phase corev1.PersistentVolumePhase, deleting bool, finalizers ...string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1", UID: "uid-pv-1", ResourceVersion: "3", Finalizers: finalizers},
		Status:     corev1.PersistentVolumeStatus{Phase: phase},
	}
	if deleting {
		pv.DeletionTimestamp = ptr.To(metav1.NewTime(ctrltest.Epoch()))
	}
	return pv
}

// bound gives pv a claimRef, as a bound volume has.
func bound(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data", UID: "uid-data"}
	return pv
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		pv   *corev1.PersistentVolume
		want Action
	}{
		{"live volume without finalizer gets it", volume(corev1.VolumeAvailable, false), AddFinalizer},
		{"live bound volume without finalizer gets it", bound(volume(corev1.VolumeBound, false, "example.com/x")), AddFinalizer},
		{"live volume with finalizer", volume(corev1.VolumeAvailable, false, finalizer), Nothing},
		{"deleting bound volume is kept", bound(volume(corev1.VolumeBound, true, finalizer)), Nothing},
		{"deleting released volume goes", bound(volume(corev1.VolumeReleased, true, finalizer)), RemoveFinalizer},
		{"deleting available volume goes", volume(corev1.VolumeAvailable, true, finalizer), RemoveFinalizer},
		{"deleting failed volume goes", volume(corev1.VolumeFailed, true, finalizer), RemoveFinalizer},
		{"deleting volume with no phase yet goes", volume("", true, finalizer), RemoveFinalizer},
		// Upstream's rule is the phase: a claimRef alone (pre-bound, claim not bound yet) holds nothing.
		{"pre-bound available volume goes", bound(volume(corev1.VolumeAvailable, true, finalizer)), RemoveFinalizer},
		{"deleting volume without our finalizer is not ours", volume(corev1.VolumeReleased, true, "example.com/x"), Nothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.pv); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSync(t *testing.T) {
	tests := []struct {
		name string
		pv   *corev1.PersistentVolume
		want []string // the volume's finalizers after the update; nil: no write
	}{
		{"adds the finalizer to a volume made before admission set it", volume(corev1.VolumeAvailable, false, "example.com/x"), []string{"example.com/x", finalizer}},
		{"removes it from a released volume being deleted", bound(volume(corev1.VolumeReleased, true, finalizer, "example.com/x")), []string{"example.com/x"}},
		{"keeps a bound volume being deleted", bound(volume(corev1.VolumeBound, true, finalizer)), nil},
		{"nothing for a protected live volume", volume(corev1.VolumeBound, false, finalizer), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ctrltest.NewEnv(tt.pv)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), tt.pv)
			if err := c.Sync(context.Background(), "pv-1"); err != nil {
				t.Fatal(err)
			}
			updated := ctrltest.FinalizerUpdate(t, env.Writes(), "update persistentvolumes pv-1", tt.want)
			if updated != nil && updated.GetResourceVersion() != "3" {
				t.Errorf("update at resourceVersion %q, want the cached 3", updated.GetResourceVersion())
			}
		})
	}
}

func TestSyncVolumeGone(t *testing.T) {
	env := ctrltest.NewEnv()
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(context.Background(), "pv-1"); err != nil {
		t.Fatal(err)
	}
	if writes := env.Writes(); len(writes) != 0 {
		t.Fatalf("writes %q", ctrltest.Describe(writes))
	}
}
