package limitranger

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func lr(items ...corev1.LimitRangeItem) []corev1.LimitRange {
	return []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}}
}

func pod(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: containers}}
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestDefault(t *testing.T) {
	ranges := lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "500m", "memory", "256Mi"), DefaultRequest: rl("cpu", "100m", "memory", "128Mi")})
	p := pod(ctr("a", nil, nil), ctr("b", rl("cpu", "1"), rl("cpu", "2")))
	p.Spec.InitContainers = []corev1.Container{ctr("i", nil, rl("memory", "64Mi"))}
	Default(ranges, p)
	check := func(c corev1.Container, wantReq, wantLim corev1.ResourceList) {
		t.Helper()
		for k, v := range wantReq {
			if got := c.Resources.Requests[k]; got.Cmp(v) != 0 {
				t.Errorf("%s request %s = %s, want %s", c.Name, k, got.String(), v.String())
			}
		}
		for k, v := range wantLim {
			if got := c.Resources.Limits[k]; got.Cmp(v) != 0 {
				t.Errorf("%s limit %s = %s, want %s", c.Name, k, got.String(), v.String())
			}
		}
	}
	check(p.Spec.Containers[0], rl("cpu", "100m", "memory", "128Mi"), rl("cpu", "500m", "memory", "256Mi"))
	check(p.Spec.Containers[1], rl("cpu", "1", "memory", "128Mi"), rl("cpu", "2", "memory", "256Mi"))
	check(p.Spec.InitContainers[0], rl("cpu", "100m"), rl("memory", "64Mi", "cpu", "500m"))
	want := "LimitRanger plugin set: cpu, memory request for container a; cpu, memory limit for container a; " +
		"memory request for container b; memory limit for container b; cpu, memory request for init container i; cpu limit for init container i"
	if got := p.Annotations[Annotation]; got != want {
		t.Errorf("annotation\n got %s\nwant %s", got, want)
	}
	untouched := pod(ctr("a", nil, nil))
	Default(lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "4")}), untouched)
	if len(untouched.Spec.Containers[0].Resources.Requests) > 0 || untouched.Annotations != nil {
		t.Errorf("a range without container defaults changed the pod: %+v", untouched)
	}
}

func TestCheck(t *testing.T) {
	container := func(min, max, ratio corev1.ResourceList) []corev1.LimitRange {
		return lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: min, Max: max, MaxLimitRequestRatio: ratio})
	}
	tests := []struct {
		name    string
		ranges  []corev1.LimitRange
		pod     *corev1.Pod
		wantErr string
	}{
		{"within bounds", container(rl("cpu", "100m"), rl("cpu", "2"), nil), pod(ctr("a", rl("cpu", "200m"), rl("cpu", "1"))), ""},
		{"over max limit", container(nil, rl("cpu", "1"), nil), pod(ctr("a", rl("cpu", "500m"), rl("cpu", "2"))), "maximum cpu usage per Container is 1, but limit is 2"},
		{"no limit under a max", container(nil, rl("memory", "1Gi"), nil), pod(ctr("a", rl("memory", "1Mi"), nil)), "maximum memory usage per Container is 1Gi.  No limit is specified"},
		{"under min request", container(rl("cpu", "100m"), nil, nil), pod(ctr("a", rl("cpu", "50m"), nil)), "minimum cpu usage per Container is 100m, but request is 50m"},
		{"no request under a min", container(rl("cpu", "100m"), nil, nil), pod(ctr("a", nil, nil)), "minimum cpu usage per Container is 100m.  No request is specified"},
		{"ratio", container(nil, nil, rl("cpu", "2")), pod(ctr("a", rl("cpu", "100m"), rl("cpu", "500m"))), "cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000"},
		{"two errors", container(nil, rl("cpu", "1"), nil), pod(ctr("a", nil, rl("cpu", "2")), ctr("b", nil, rl("cpu", "3"))),
			"[maximum cpu usage per Container is 1, but limit is 2, maximum cpu usage per Container is 1, but limit is 3]"},
		{"pod total over max", lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")}),
			pod(ctr("a", nil, rl("cpu", "600m")), ctr("b", nil, rl("cpu", "600m"))), "maximum cpu usage per Pod is 1, but limit is 1200m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPod(tt.ranges, tt.pod)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("got  %q\nwant %q", got, tt.wantErr)
			}
		})
	}
	claim := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "20Gi")}}}
	err := CheckClaim(lr(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "10Gi")}), claim)
	if err == nil || err.Error() != "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi" {
		t.Errorf("claim: %v", err)
	}
}

type rangeLookup []corev1.LimitRange

func (l rangeLookup) Get(context.Context, string, string, string, string) (runtime.Object, error) {
	return nil, nil
}

func (l rangeLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &corev1.LimitRangeList{Items: l}, nil
}

func TestPlugin(t *testing.T) {
	pods := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	lookup := rangeLookup(lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "2"), DefaultRequest: rl("cpu", "1"), Max: rl("cpu", "1")}))
	p := New(nil)
	a := &admission.Attributes{Verb: "create", Resource: pods, Namespace: "ns", Name: "p", Object: pod(ctr("a", nil, nil))}
	if err := p.Admit(context.Background(), a, lookup); err != nil {
		t.Fatal(err)
	}
	err := p.Validate(context.Background(), a, lookup)
	if !apierrors.IsForbidden(err) || err.Error() != `pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2` {
		t.Fatalf("defaults beyond the max: %v", err)
	}
	upd := &admission.Attributes{Verb: "update", Resource: pods, Namespace: "ns", Name: "p", Object: pod(ctr("a", nil, rl("cpu", "5")))}
	if err := p.Validate(context.Background(), upd, lookup); err != nil {
		t.Fatalf("pod updates are not judged: %v", err)
	}
}

// TestPluginResize follows the upstream spec pod-resize-limit-ranger-test: a Container range of
// min 50m/50Mi, max 500m/500Mi (with defaults) judges a resize through pods/resize as a create.
func TestPluginResize(t *testing.T) {
	pods := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	lookup := rangeLookup(lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Max: rl("cpu", "500m", "memory", "500Mi"), Min: rl("cpu", "50m", "memory", "50Mi"),
		Default: rl("cpu", "100m", "memory", "100Mi"), DefaultRequest: rl("cpu", "50m", "memory", "50Mi")}))
	both := func(cpu, mem string) corev1.ResourceList { return rl("cpu", cpu, "memory", mem) }
	old := pod(ctr("c1", both("300m", "300Mi"), both("300m", "300Mi")))
	attrs := func(sub string, c corev1.Container) *admission.Attributes {
		return &admission.Attributes{Verb: "update", Resource: pods, Subresource: sub, Namespace: "ns", Name: "p",
			Object: pod(c), OldObject: old}
	}
	deleting := attrs("resize", ctr("c1", both("300m", "750Mi"), both("300m", "750Mi")))
	deleting.OldObject = func() *corev1.Pod { p := old.DeepCopy(); p.DeletionTimestamp = &metav1.Time{}; return p }()
	tests := []struct {
		name    string
		a       *admission.Attributes
		wantErr string
	}{
		{"within the range", attrs("resize", ctr("c1", both("400m", "400Mi"), both("400m", "400Mi"))), ""},
		{"memory over max", attrs("resize", ctr("c1", both("250m", "750Mi"), both("250m", "750Mi"))),
			`pods "p" is forbidden: maximum memory usage per Container is 500Mi, but limit is 750Mi`},
		{"cpu over max", attrs("resize", ctr("c1", both("600m", "400Mi"), both("600m", "400Mi"))),
			`pods "p" is forbidden: maximum cpu usage per Container is 500m, but limit is 600m`},
		{"cpu under min", attrs("resize", ctr("c1", both("10m", "400Mi"), both("400m", "400Mi"))),
			`pods "p" is forbidden: minimum cpu usage per Container is 50m, but request is 10m`},
		{"a status write is not judged", attrs("status", ctr("c1", both("600m", "400Mi"), both("600m", "400Mi"))), ""},
		{"a pod being deleted is not judged", deleting, ""},
	}
	p := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tt.a, lookup)
			got := ""
			if err != nil {
				got = err.Error()
				if !apierrors.IsForbidden(err) {
					t.Errorf("not a Forbidden: %v", err)
				}
			}
			if got != tt.wantErr {
				t.Errorf("got  %q\nwant %q", got, tt.wantErr)
			}
		})
	}
}

// TestDefaultResize: a resize of a pod created before the range gets the range's defaults for what
// it states none of, as upstream's LimitRanger mutates a resize too, but no annotation (upstream's
// resize strategy keeps only the containers' resources of the request).
func TestDefaultResize(t *testing.T) {
	pods := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	lookup := rangeLookup(lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "1"), DefaultRequest: rl("cpu", "100m", "memory", "64Mi")}))
	old := pod(ctr("c", rl("cpu", "200m"), rl("cpu", "1")))
	a := &admission.Attributes{Verb: "update", Resource: pods, Subresource: "resize", Namespace: "ns", Name: "p",
		Object: pod(ctr("c", rl("cpu", "300m"), rl("cpu", "1"))), OldObject: old}
	if err := (New(nil)).Admit(context.Background(), a, lookup); err != nil {
		t.Fatal(err)
	}
	got := a.Object.(*corev1.Pod)
	if req := got.Spec.Containers[0].Resources.Requests; req.Cpu().String() != "300m" || req.Memory().String() != "64Mi" {
		t.Errorf("requests %v: want the resize's cpu kept and the default memory request", req)
	}
	if _, ok := got.Annotations[Annotation]; ok {
		t.Errorf("a resize was annotated: %v", got.Annotations)
	}
}
