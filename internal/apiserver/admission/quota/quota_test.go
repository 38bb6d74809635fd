package quota

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/quota"
	"github.com/skiff-sh/skiff/internal/registry"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func rq(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func pod(name string, req, lim corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}}}
}

var (
	podsGR = schema.GroupResource{Resource: "pods"}
	pvcGR  = schema.GroupResource{Resource: "persistentvolumeclaims"}
	cmGR   = schema.GroupResource{Resource: "configmaps"}
)

func TestCheck(t *testing.T) {
	claim := func(class string, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class), Resources: corev1.VolumeResourceRequirements{Requests: list("storage", size)}}}
	}
	deadline := pod("batch", nil, nil)
	deadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	tests := []struct {
		name    string
		quotas  []corev1.ResourceQuota
		gr      schema.GroupResource
		obj     runtime.Object
		old     runtime.Object
		wantErr string
		want    map[string]string // quota name -> PrettyPrint of its new used
	}{
		{"pods=1 takes the first pod", []corev1.ResourceQuota{rq("q", list("pods", "1"), list("pods", "0"))}, podsGR, pod("a", nil, nil), nil,
			"", map[string]string{"q": "pods=1"}},
		{"pods=1 refuses the second", []corev1.ResourceQuota{rq("q", list("pods", "1"), list("pods", "1"))}, podsGR, pod("b", nil, nil), nil,
			"exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1", nil},
		{"compute over the limit names only what is exceeded", []corev1.ResourceQuota{rq("compute", list("requests.cpu", "1", "pods", "10"), list("requests.cpu", "800m", "pods", "2"))},
			podsGR, pod("a", list("cpu", "300m"), nil), nil, "exceeded quota: compute, requested: requests.cpu=300m, used: requests.cpu=800m, limited: requests.cpu=1", nil},
		{"a quota on limits.cpu needs every container's limit", []corev1.ResourceQuota{rq("q", list("limits.cpu", "4", "requests.memory", "1Gi"), list("limits.cpu", "0", "requests.memory", "0"))},
			podsGR, pod("a", nil, nil), nil, "failed quota: q: must specify limits.cpu for: c; requests.memory for: c", nil},
		{"no recorded usage yet", []corev1.ResourceQuota{rq("q", list("pods", "5", "configmaps", "1"), nil)}, podsGR, pod("a", nil, nil), nil,
			"status unknown for quota: q, resources: pods", nil},
		{"a name the controller cannot count is not enforced", []corev1.ResourceQuota{rq("q", list("count/widgets.example.com", "0", "configmaps", "5"), list("configmaps", "1"))},
			schema.GroupResource{Group: "example.com", Resource: "widgets"}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}, nil, "", map[string]string{}},
		{"a quota on other things is not charged", []corev1.ResourceQuota{rq("q", list("configmaps", "1"), list("configmaps", "1"))}, podsGR, pod("a", nil, nil), nil, "", map[string]string{}},
		{"count/<resource> and the legacy name", []corev1.ResourceQuota{rq("q", list("configmaps", "2", "count/configmaps", "5"), list("configmaps", "1", "count/configmaps", "1"))},
			cmGR, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}, nil, "", map[string]string{"q": "configmaps=2,count/configmaps=2"}},
		{"per storage class", []corev1.ResourceQuota{rq("q", list("requests.storage", "100Gi", "gold.storageclass.storage.k8s.io/requests.storage", "10Gi"),
			list("requests.storage", "0", "gold.storageclass.storage.k8s.io/requests.storage", "5Gi"))}, pvcGR, claim("gold", "6Gi"), nil,
			"exceeded quota: q, requested: gold.storageclass.storage.k8s.io/requests.storage=6Gi, used: gold.storageclass.storage.k8s.io/requests.storage=5Gi, limited: gold.storageclass.storage.k8s.io/requests.storage=10Gi", nil},
		{"a claim grown by an update is charged the difference", []corev1.ResourceQuota{rq("q", list("requests.storage", "10Gi"), list("requests.storage", "4Gi"))},
			pvcGR, claim("gold", "6Gi"), claim("gold", "4Gi"), "", map[string]string{"q": "requests.storage=6Gi"}},
		{"an update that changes nothing charges nothing", []corev1.ResourceQuota{rq("q", list("pods", "1"), list("pods", "1"))}, podsGR, pod("a", nil, nil), pod("a", nil, nil), "", map[string]string{}},
		{"Terminating scope skips a pod without a deadline", []corev1.ResourceQuota{rq("q", list("pods", "0"), list("pods", "0"), corev1.ResourceQuotaScopeTerminating)},
			podsGR, pod("a", nil, nil), nil, "", map[string]string{}},
		{"Terminating scope takes a pod with a deadline", []corev1.ResourceQuota{rq("q", list("pods", "0"), list("pods", "0"), corev1.ResourceQuotaScopeTerminating)},
			podsGR, deadline, nil, "exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0", nil},
		{"BestEffort scope counts only best-effort pods", []corev1.ResourceQuota{rq("q", list("pods", "0"), list("pods", "0"), corev1.ResourceQuotaScopeBestEffort)},
			podsGR, pod("a", list("cpu", "1"), nil), nil, "", map[string]string{}},
		{"two quotas: both charged", []corev1.ResourceQuota{rq("b", list("pods", "5"), list("pods", "1")), rq("a", list("requests.cpu", "2"), list("requests.cpu", "1"))},
			podsGR, pod("a", list("cpu", "500m"), nil), nil, "", map[string]string{"a": "requests.cpu=1500m", "b": "pods=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(tt.quotas, Write{Resource: tt.gr, Object: tt.obj, Old: tt.old})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("error %q\nwant  %q", gotErr, tt.wantErr)
			}
			if err != nil {
				return
			}
			gotUsed := map[string]string{}
			for _, q := range got {
				gotUsed[q.Name] = quota.PrettyPrint(q.Status.Used)
			}
			if fmt.Sprint(gotUsed) != fmt.Sprint(tt.want) {
				t.Errorf("charged %v, want %v", gotUsed, tt.want)
			}
		})
	}
}

// fakeStore keeps quotas with resourceVersions and can make another writer win the first writes.
type fakeStore struct {
	mu       sync.Mutex
	quotas   map[string]*corev1.ResourceQuota
	steal    int // the next writes that find another writer's pod charged first
	failures int
}

func (s *fakeStore) list() *corev1.ResourceQuotaList {
	l := &corev1.ResourceQuotaList{}
	for _, q := range s.quotas {
		l.Items = append(l.Items, *q.DeepCopy())
	}
	return l
}

func (s *fakeStore) Get(_ context.Context, group, resource, _, name string) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

func (s *fakeStore) List(context.Context, string, string, string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list(), nil
}

func (s *fakeStore) ListFresh(ctx context.Context, g, r, ns string) (runtime.Object, error) {
	return s.List(ctx, g, r, ns)
}

func (s *fakeStore) UpdateStatus(_ context.Context, _, _ string, obj runtime.Object) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := obj.(*corev1.ResourceQuota)
	cur := s.quotas[q.Name]
	bump := func(c *corev1.ResourceQuota) {
		n, _ := strconv.Atoi(c.ResourceVersion)
		c.ResourceVersion = strconv.Itoa(n + 1)
	}
	if s.steal > 0 {
		// Another API server charged a pod first.
		s.steal--
		used := cur.Status.Used[corev1.ResourcePods]
		used.Add(resource.MustParse("1"))
		cur.Status.Used[corev1.ResourcePods] = used
		bump(cur)
	}
	if q.ResourceVersion != cur.ResourceVersion {
		s.failures++
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, q.Name, errors.New("the object has been modified"))
	}
	c := q.DeepCopy()
	bump(c)
	s.quotas[q.Name] = c
	return c, nil
}

func TestPluginChargesWithCompareAndSwap(t *testing.T) {
	pods := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	newStore := func(hard string, steal int) *fakeStore {
		q := rq("q", list("pods", hard), list("pods", "0"))
		return &fakeStore{quotas: map[string]*corev1.ResourceQuota{"q": &q}, steal: steal}
	}
	attrs := func(name string) *admission.Attributes {
		return &admission.Attributes{Verb: "create", Resource: pods, Namespace: "ns", Name: name, Object: pod(name, nil, nil)}
	}
	p := New(nil)

	t.Run("second pod refused immediately", func(t *testing.T) {
		s := newStore("1", 0)
		if err := p.Validate(context.Background(), attrs("a"), s); err != nil {
			t.Fatalf("first pod: %v", err)
		}
		err := p.Validate(context.Background(), attrs("b"), s)
		if !apierrors.IsForbidden(err) || err.Error() != `pods "b" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1` {
			t.Fatalf("second pod: %v", err)
		}
	})
	t.Run("a conflict re-reads and re-checks", func(t *testing.T) {
		s := newStore("2", 1)
		if err := p.Validate(context.Background(), attrs("a"), s); err != nil {
			t.Fatalf("pod after a conflict: %v", err)
		}
		if s.failures != 1 || s.quotas["q"].Status.Used.Pods().String() != "2" {
			t.Fatalf("failures %d, used %s; want one conflict and both pods charged", s.failures, s.quotas["q"].Status.Used.Pods())
		}
	})
	t.Run("the other writer took the last unit", func(t *testing.T) {
		s := newStore("1", 1)
		err := p.Validate(context.Background(), attrs("a"), s)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("want the pod refused once the other charge is seen, got %v", err)
		}
	})
	t.Run("dry run charges nothing", func(t *testing.T) {
		s := newStore("1", 0)
		a := attrs("a")
		a.DryRun = true
		if err := p.Validate(context.Background(), a, s); err != nil {
			t.Fatal(err)
		}
		if s.quotas["q"].Status.Used.Pods().String() != "0" {
			t.Fatalf("dry run charged the quota")
		}
	})
	t.Run("concurrent creates never exceed the quota", func(t *testing.T) {
		s := newStore("3", 0)
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted := 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if err := p.Validate(context.Background(), attrs(fmt.Sprint("p", i)), s); err == nil {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}(i)
		}
		wg.Wait()
		if admitted > 3 || s.quotas["q"].Status.Used.Pods().Value() != int64(admitted) {
			t.Fatalf("admitted %d, used %s; want at most 3 and used = admitted", admitted, s.quotas["q"].Status.Used.Pods())
		}
	})
}

// applied is pod with its node reporting req and lim applied and req allocated, as a running pod.
func applied(p *corev1.Pod, req, lim corev1.ResourceList) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", AllocatedResources: req,
		Resources: &corev1.ResourceRequirements{Requests: req, Limits: lim}}}
	return p
}

// resized is the pod's update through pods/resize: its spec's resources changed, its status not.
func resized(p *corev1.Pod, req, lim corev1.ResourceList) *corev1.Pod {
	r := p.DeepCopy()
	r.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: lim}
	return r
}

// TestCheckResize follows the upstream spec pod-resize-resource-quota-test: a quota of cpu 800m
// and memory 800Mi, two pods of 300m/300Mi, one resized to 400m/400Mi (used 700m/700Mi).
func TestCheckResize(t *testing.T) {
	quotaAt := func(cpu, mem string) corev1.ResourceQuota {
		return rq("resize-resource-quota", list("cpu", "800m", "memory", "800Mi"), list("cpu", cpu, "memory", mem))
	}
	both := func(cpu, mem string) corev1.ResourceList { return list("cpu", cpu, "memory", mem) }
	// running is testpod1 at cpu m and memory Mi, applied by its node.
	running := func(m string) *corev1.Pod {
		r := both(m+"m", m+"Mi")
		return applied(pod("testpod1", r, r), r, r)
	}
	noLimits := pod("old", list("cpu", "100m"), nil)
	limitsQuota := rq("q", list("limits.cpu", "4"), list("limits.cpu", "0"))
	tests := []struct {
		name    string
		quotas  []corev1.ResourceQuota
		sub     string
		obj     *corev1.Pod
		old     *corev1.Pod
		wantErr string
		want    map[string]string
	}{
		{"a resize within the quota is charged its increase", []corev1.ResourceQuota{quotaAt("600m", "600Mi")}, "resize",
			resized(running("300"), both("400m", "400Mi"), both("400m", "400Mi")), running("300"),
			"", map[string]string{"resize-resource-quota": "cpu=700m,memory=700Mi"}},
		{"memory beyond the quota is refused, the cpu lowered with it ignored", []corev1.ResourceQuota{quotaAt("700m", "700Mi")}, "resize",
			resized(running("400"), both("250m", "750Mi"), both("250m", "750Mi")), running("400"),
			"exceeded quota: resize-resource-quota, requested: memory=350Mi, used: memory=700Mi, limited: memory=800Mi", nil},
		{"cpu beyond the quota is refused", []corev1.ResourceQuota{quotaAt("700m", "700Mi")}, "resize",
			resized(running("400"), both("600m", "400Mi"), both("600m", "400Mi")), running("400"),
			"exceeded quota: resize-resource-quota, requested: cpu=200m, used: cpu=700m, limited: cpu=800m", nil},
		{"a shrink charges nothing (the node holds the larger until it applies it)", []corev1.ResourceQuota{quotaAt("800m", "800Mi")}, "resize",
			resized(running("400"), both("100m", "400Mi"), both("100m", "400Mi")), running("400"), "", map[string]string{}},
		{"a resize is held to the quota's constraints", []corev1.ResourceQuota{limitsQuota}, "resize",
			resized(noLimits, list("cpu", "200m"), nil), noLimits, "failed quota: q: must specify limits.cpu for: c", nil},
		{"another update of a pod is not", []corev1.ResourceQuota{limitsQuota}, "",
			func() *corev1.Pod { p := noLimits.DeepCopy(); p.Labels = map[string]string{"a": "b"}; return p }(), noLimits, "", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(tt.quotas, Write{Resource: podsGR, Subresource: tt.sub, Object: tt.obj, Old: tt.old})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("error %q\nwant  %q", gotErr, tt.wantErr)
			}
			gotUsed := map[string]string{}
			for _, q := range got {
				gotUsed[q.Name] = quota.PrettyPrint(q.Status.Used)
			}
			if err == nil && fmt.Sprint(gotUsed) != fmt.Sprint(tt.want) {
				t.Errorf("charged %v, want %v", gotUsed, tt.want)
			}
		})
	}
}

// TestCheckScopeChange: an update the quota did not cover before (a pod that became Terminating)
// is charged all it holds, as upstream, not the difference.
func TestCheckScopeChange(t *testing.T) {
	before := pod("a", list("cpu", "1"), nil)
	after := before.DeepCopy()
	after.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	q := rq("q", list("pods", "5", "requests.cpu", "4"), list("pods", "0", "requests.cpu", "0"), corev1.ResourceQuotaScopeTerminating)
	got, err := Check([]corev1.ResourceQuota{q}, Write{Resource: podsGR, Object: after, Old: before})
	if err != nil || len(got) != 1 || quota.PrettyPrint(got[0].Status.Used) != "pods=1,requests.cpu=1" {
		t.Fatalf("got %v, %v; want the quota charged pods=1,requests.cpu=1", got, err)
	}
}

func TestPluginResize(t *testing.T) {
	pods := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	old := applied(pod("p", list("cpu", "300m"), nil), list("cpu", "300m"), nil)
	attrs := func(sub, cpu string) *admission.Attributes {
		return &admission.Attributes{Verb: "update", Resource: pods, Subresource: sub, Namespace: "ns", Name: "p",
			Object: resized(old, list("cpu", cpu), nil), OldObject: old}
	}
	newStore := func() *fakeStore {
		q := rq("q", list("requests.cpu", "1"), list("requests.cpu", "500m"))
		return &fakeStore{quotas: map[string]*corev1.ResourceQuota{"q": &q}}
	}
	p := New(nil)

	s := newStore()
	if err := p.Validate(context.Background(), attrs("resize", "600m"), s); err != nil {
		t.Fatalf("resize within the quota: %v", err)
	}
	if got := s.quotas["q"].Status.Used[corev1.ResourceRequestsCPU]; got.String() != "800m" {
		t.Fatalf("used %s after the resize, want 800m", got.String())
	}
	err := p.Validate(context.Background(), attrs("resize", "900m"), s)
	if !apierrors.IsForbidden(err) || err.Error() != `pods "p" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=800m, limited: requests.cpu=1` {
		t.Fatalf("resize beyond the quota: %v", err)
	}
	s = newStore()
	if err := p.Validate(context.Background(), attrs("status", "900m"), s); err != nil {
		t.Fatalf("a status write is not charged: %v", err)
	}
	if got := s.quotas["q"].Status.Used[corev1.ResourceRequestsCPU]; got.String() != "500m" {
		t.Fatalf("a status write charged the quota: used %s", got.String())
	}
}
