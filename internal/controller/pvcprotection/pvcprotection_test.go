package pvcprotection

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

const finalizer = volumeutil.PVCProtectionFinalizer

func claim(name string, deleting bool, finalizers ...string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		ResourceVersion: "7", Finalizers: finalizers}}
	if deleting {
		c.DeletionTimestamp = ptr.To(metav1.NewTime(ctrltest.Epoch()))
	}
	return c
}

// ephemeralClaim is the claim made for pod's ephemeral volume vol, controlled by the pod.
func ephemeralClaim(pod *corev1.Pod, vol string, deleting bool) *corev1.PersistentVolumeClaim {
	c := claim(pod.Name+"-"+vol, deleting, finalizer)
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	return c
}

// withClaim adds a persistentVolumeClaim volume naming claim to pod.
func withClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "v-" + claim,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return pod
}

// withEphemeral adds a generic ephemeral volume named vol to pod.
func withEphemeral(pod *corev1.Pod, vol string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vol,
		VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
	return pod
}

func forceDeleted(pod *corev1.Pod) *corev1.Pod {
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(ctrltest.Epoch()))
	pod.DeletionGracePeriodSeconds = ptr.To[int64](0)
	return pod
}

func TestDecide(t *testing.T) {
	running := withClaim(ctrltest.MakePod("web").Running().Obj(), "data")
	eph := withEphemeral(ctrltest.MakePod("job").Running().Obj(), "scratch")
	tests := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		pods  []*corev1.Pod
		want  Plan
	}{
		{"live claim without finalizer gets it", claim("data", false), nil, Plan{Action: AddFinalizer}},
		{"live claim in use without finalizer gets it", claim("data", false, "example.com/x"), []*corev1.Pod{running}, Plan{Action: AddFinalizer}},
		{"live claim with finalizer", claim("data", false, finalizer), nil, Plan{}},
		{"deleting claim without our finalizer is not ours", claim("data", true, "example.com/x"), nil, Plan{}},
		{"deleting claim no pod uses", claim("data", true, finalizer), nil, Plan{Action: RemoveFinalizer}},
		{"deleting claim a running pod uses", claim("data", true, finalizer), []*corev1.Pod{running}, Plan{UsedBy: "web"}},
		{"another claim's pod", claim("logs", true, finalizer), []*corev1.Pod{running}, Plan{Action: RemoveFinalizer}},
		{"same claim name in another namespace", claim("data", true, finalizer),
			[]*corev1.Pod{withClaim(ctrltest.MakePod("web").Namespace("other").Running().Obj(), "data")}, Plan{Action: RemoveFinalizer}},
		// The scheduler refuses a claim being deleted, so a pending unscheduled pod never runs on it.
		{"unscheduled pod", claim("data", true, finalizer), []*corev1.Pod{withClaim(ctrltest.MakePod("web").Obj(), "data")}, Plan{Action: RemoveFinalizer}},
		{"scheduled pending pod", claim("data", true, finalizer), []*corev1.Pod{withClaim(ctrltest.MakePod("web").Node("n1").Obj(), "data")}, Plan{UsedBy: "web"}},
		// Upstream: a finished pod that still exists keeps the claims it names.
		{"succeeded pod still holds it", claim("data", true, finalizer),
			[]*corev1.Pod{withClaim(ctrltest.MakePod("web").Node("n1").Phase(corev1.PodSucceeded).Obj(), "data")}, Plan{UsedBy: "web"}},
		{"terminating pod still holds it", claim("data", true, finalizer),
			[]*corev1.Pod{withClaim(ctrltest.MakePod("web").Running().Deleting(ctrltest.Epoch()).Obj(), "data")}, Plan{UsedBy: "web"}},
		{"ephemeral claim of a running pod", ephemeralClaim(eph, "scratch", true), []*corev1.Pod{eph}, Plan{UsedBy: "job"}},
		{"ephemeral claim of a force-deleted pod", ephemeralClaim(eph, "scratch", true), []*corev1.Pod{forceDeleted(eph.DeepCopy())}, Plan{Action: RemoveFinalizer}},
		{"claim named like an ephemeral one but not the pod's", claim("job-scratch", true, finalizer), []*corev1.Pod{eph}, Plan{Action: RemoveFinalizer}},
		{"second pod holds it", claim("data", true, finalizer),
			[]*corev1.Pod{withClaim(ctrltest.MakePod("a").Running().Obj(), "logs"), withClaim(ctrltest.MakePod("b").Running().Obj(), "data")}, Plan{UsedBy: "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.claim, tt.pods); got != tt.want {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMayRelease(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		deleted bool
		want    bool
	}{
		{"running pod only holds", ctrltest.MakePod("p").Running().Obj(), false, false},
		{"deleted", ctrltest.MakePod("p").Running().Obj(), true, true},
		{"succeeded", ctrltest.MakePod("p").Node("n").Phase(corev1.PodSucceeded).Obj(), false, true},
		{"failed", ctrltest.MakePod("p").Node("n").Phase(corev1.PodFailed).Obj(), false, true},
		{"being deleted", ctrltest.MakePod("p").Running().Deleting(ctrltest.Epoch()).Obj(), false, true},
		{"unscheduled", ctrltest.MakePod("p").Obj(), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mayRelease(tt.pod, tt.deleted); got != tt.want {
				t.Errorf("mayRelease = %v, want %v", got, tt.want)
			}
		})
	}
}

// setup builds the controller on a fake clientset holding live, with cached in the informers'
// caches (the two differ when the cache lags).
func setup(t *testing.T, live []runtime.Object, cached ...runtime.Object) (*Controller, *ctrltest.Env) {
	t.Helper()
	env := ctrltest.NewEnv(live...)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cached {
		switch o.(type) {
		case *corev1.PersistentVolumeClaim:
			ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), o)
		case *corev1.Pod:
			ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), o)
		}
	}
	return c, env
}

func TestSync(t *testing.T) {
	user := withClaim(ctrltest.MakePod("web").Running().Obj(), "data")
	tests := []struct {
		name   string
		live   []runtime.Object
		cached []runtime.Object
		want   []string // the claim's finalizers after the update; nil: no write
		lists  int      // live LISTs of pods
	}{
		{name: "adds the finalizer to a claim made before admission set it",
			live: []runtime.Object{claim("data", false, "example.com/x")}, cached: []runtime.Object{claim("data", false, "example.com/x")},
			want: []string{"example.com/x", finalizer}},
		{name: "removes it once no pod uses the claim",
			live: []runtime.Object{claim("data", true, "example.com/x", finalizer)}, cached: []runtime.Object{claim("data", true, "example.com/x", finalizer)},
			want: []string{"example.com/x"}, lists: 1},
		{name: "a pod in the cache keeps it, without a live list",
			live: []runtime.Object{claim("data", true, finalizer), user}, cached: []runtime.Object{claim("data", true, finalizer), user}},
		// The cache lags: the pod was created after the claim was seen, and only the API server knows it.
		{name: "a pod only the API server has keeps it",
			live: []runtime.Object{claim("data", true, finalizer), user}, cached: []runtime.Object{claim("data", true, finalizer)}, lists: 1},
		{name: "nothing for a protected live claim",
			live: []runtime.Object{claim("data", false, finalizer)}, cached: []runtime.Object{claim("data", false, finalizer)}},
		{name: "nothing for a claim gone from the cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, env := setup(t, tt.live, tt.cached...)
			if err := c.Sync(context.Background(), "default/data"); err != nil {
				t.Fatal(err)
			}
			lists := 0
			for _, a := range env.Client.Actions() {
				if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
					lists++
					if ns := a.GetNamespace(); ns != "default" {
						t.Errorf("listed pods in %q", ns)
					}
				}
			}
			if lists != tt.lists {
				t.Errorf("%d live pod lists, want %d", lists, tt.lists)
			}
			writes := env.Writes()
			if tt.want == nil {
				if len(writes) != 0 {
					t.Fatalf("writes %q, want none", ctrltest.Describe(writes))
				}
				return
			}
			if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"update persistentvolumeclaims data"}) {
				t.Fatalf("writes %q", got)
			}
			updated := writes[0].(clienttesting.UpdateAction).GetObject().(*corev1.PersistentVolumeClaim)
			if !slices.Equal(updated.Finalizers, tt.want) {
				t.Errorf("finalizers %q, want %q", updated.Finalizers, tt.want)
			}
			// The update carries the version it decided on, so a claim changed meanwhile conflicts.
			if updated.ResourceVersion != "7" {
				t.Errorf("update at resourceVersion %q, want the cached 7", updated.ResourceVersion)
			}
		})
	}
}

// TestPodEventsEnqueueClaims: a pod deleted or finished enqueues the claims it names (including
// its ephemeral ones and through a tombstone); a running pod does not.
func TestPodEventsEnqueueClaims(t *testing.T) {
	pod := withEphemeral(withClaim(ctrltest.MakePod("web").Running().Obj(), "data"), "scratch")
	tests := []struct {
		name  string
		event func(c *Controller)
		want  []string
	}{
		{"running pod added", func(c *Controller) { c.enqueuePodClaims(pod, false) }, nil},
		{"pod deleted", func(c *Controller) { c.enqueuePodClaims(pod, true) }, []string{"default/data", "default/web-scratch"}},
		{"pod deleted, seen as a tombstone", func(c *Controller) {
			c.enqueuePodClaims(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: pod}, false)
		}, []string{"default/data", "default/web-scratch"}},
		{"pod finished", func(c *Controller) {
			done := pod.DeepCopy()
			done.Status.Phase = corev1.PodSucceeded
			c.enqueuePodClaims(done, false)
		}, []string{"default/data", "default/web-scratch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := setup(t, nil)
			tt.event(c)
			var got []string
			for c.loop.Queue.Len() > 0 {
				key, _ := c.loop.Queue.Get()
				got = append(got, key)
				c.loop.Queue.Done(key)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %q, want %q", got, tt.want)
			}
		})
	}
}
