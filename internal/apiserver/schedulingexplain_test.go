package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	"github.com/skiff-sh/skiff/internal/scheduler"
)

// explainAuthorizer lets system:masters do anything (impersonating included); "no-nodes" anything but
// listing nodes; "no-explain" anything but creating explanations.
type explainAuthorizer struct{}

func (explainAuthorizer) Authorize(_ context.Context, u *UserInfo, info *RequestInfo) (bool, string) {
	for _, g := range u.Groups {
		if g == "system:masters" {
			return true, ""
		}
	}
	switch {
	case u.Name == "no-nodes" && info.Resource == "nodes" && info.Verb == "list":
		return false, "no nodes for you"
	case u.Name == "no-explain" && info.Resource == explainv1.Resource:
		return false, "no explanations for you"
	}
	return true, ""
}

// lateExplainer is set once the explainer's informers (clients of the server itself) have synced.
type lateExplainer struct {
	e atomic.Pointer[scheduler.Explainer]
}

func (l *lateExplainer) Explain(ctx context.Context, ns, name string, nodes []string) (explainv1.PodSchedulingExplanationStatus, error) {
	e := l.e.Load()
	if e == nil {
		return explainv1.PodSchedulingExplanationStatus{}, apierrors.NewServiceUnavailable("not synced")
	}
	return e.Explain(ctx, ns, name, nodes)
}

// TestPodSchedulingExplanation creates explanations through the API server over real etcd: the
// per-node verdicts, validation, NotFound, and the reads the requester must be allowed.
func TestPodSchedulingExplanation(t *testing.T) {
	late := &lateExplainer{}
	c := startTestCluster(t, func(cfg *Config) {
		cfg.Authorizer = explainAuthorizer{}
		cfg.SchedulingExplainer = late
	})
	ctx := context.Background()
	ns := c.namespace(t, "explain")
	node := func(name, cpu string, taints ...corev1.Taint) *corev1.Node {
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res}}
	}
	for _, n := range []*corev1.Node{
		node("tainted", "8", corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}),
		node("small", "1"),
		node("big", "8"),
	} {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := makePod("waiting").ns(ns).container("c", "busybox").obj()
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	factory := informers.NewSharedInformerFactory(c.client, 0)
	explainer, err := scheduler.NewExplainer(c.client, factory, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	cache.WaitForCacheSync(stop, explainer.HasSynced)
	late.e.Store(explainer)

	create := func(cfg *rest.Config, namespace string, spec explainv1.PodSchedulingExplanationSpec) (*explainv1.PodSchedulingExplanation, error) {
		body, err := json.Marshal(&explainv1.PodSchedulingExplanation{
			TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.skiff.sh/v1alpha1", Kind: "PodSchedulingExplanation"}, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		res := kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient().Post().
			AbsPath("/apis/scheduling.skiff.sh/v1alpha1/namespaces", namespace, "podschedulingexplanations").
			SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").Body(body).Do(ctx)
		raw, err := res.Raw()
		if err != nil {
			return nil, res.Error() // the Status the server answered
		}
		out := &explainv1.PodSchedulingExplanation{}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		return out, nil
	}
	as := func(user string) *rest.Config {
		cfg := rest.CopyConfig(c.admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		return cfg
	}

	t.Run("every node", func(t *testing.T) {
		out, err := create(c.admin, ns, explainv1.PodSchedulingExplanationSpec{PodName: "waiting"})
		if err != nil {
			t.Fatal(err)
		}
		st := out.Status
		if st.TotalNodes != 3 || st.FeasibleNodes != 1 || len(st.Nodes) != 3 {
			t.Fatalf("status %+v", st)
		}
		reasons := map[string]string{}
		for _, n := range st.Nodes {
			reasons[n.Name] = strings.Join(n.Reasons, "; ")
		}
		if reasons["small"] != "Insufficient cpu" || !strings.Contains(reasons["tainted"], "untolerated taint {dedicated: gpu}") || reasons["big"] != "" {
			t.Fatalf("reasons %v", reasons)
		}
		if st.Nodes[2].Name != "big" || !st.Nodes[2].Feasible || st.Nodes[2].Rank != 1 {
			t.Fatalf("feasible node last with rank 1: %+v", st.Nodes)
		}
		if len(st.Summary) != 2 {
			t.Fatalf("summary %+v", st.Summary)
		}
	})
	t.Run("named node", func(t *testing.T) {
		out, err := create(c.admin, ns, explainv1.PodSchedulingExplanationSpec{PodName: "waiting", NodeNames: []string{"big"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Status.Nodes) != 1 || len(out.Status.Nodes[0].Scores) == 0 || len(out.Status.Nodes[0].Verdicts) == 0 {
			t.Fatalf("named node %+v", out.Status.Nodes)
		}
	})
	t.Run("validation", func(t *testing.T) {
		_, err := create(c.admin, ns, explainv1.PodSchedulingExplanationSpec{NodeNames: []string{"a", "a"}})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("missing podName: %v", err)
		}
		causes := statusOf(t, err).Details.Causes
		if len(causes) != 2 || causes[0].Field != "spec.podName" || causes[1].Field != "spec.nodeNames[1]" {
			t.Fatalf("causes %+v", causes)
		}
	})
	t.Run("not found", func(t *testing.T) {
		if _, err := create(c.admin, ns, explainv1.PodSchedulingExplanationSpec{PodName: "nope"}); !apierrors.IsNotFound(err) {
			t.Fatalf("unknown pod: %v", err)
		}
		if _, err := create(c.admin, ns, explainv1.PodSchedulingExplanationSpec{PodName: "waiting", NodeNames: []string{"gone"}}); !apierrors.IsNotFound(err) {
			t.Fatalf("unknown node: %v", err)
		}
	})
	t.Run("authorization", func(t *testing.T) {
		_, err := create(as("no-nodes"), ns, explainv1.PodSchedulingExplanationSpec{PodName: "waiting"})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot list nodes`) {
			t.Fatalf("a user who cannot list nodes: %v", err)
		}
		_, err = create(as("no-explain"), ns, explainv1.PodSchedulingExplanationSpec{PodName: "waiting"})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("a user who cannot create explanations: %v", err)
		}
		if _, err := create(as("someone"), ns, explainv1.PodSchedulingExplanationSpec{PodName: "waiting"}); err != nil {
			t.Fatalf("an allowed user: %v", err)
		}
	})
	t.Run("create only", func(t *testing.T) {
		code, _ := get(t, httpClientFor(t, c.admin), c.server.URL+"/apis/scheduling.skiff.sh/v1alpha1/namespaces/"+ns+"/podschedulingexplanations")
		if code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
			t.Fatalf("list answered %d", code)
		}
	})
}

func httpClientFor(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}
