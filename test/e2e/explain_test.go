package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	"github.com/skiff-sh/skiff/internal/simnode"
)

// TestPodSchedulingExplanationWithKubectl: kubectl lists the review resource and `kubectl create
// -f` of a PodSchedulingExplanation prints the scheduler's verdict for every node; a user bound to
// view in the namespace is refused.
func TestPodSchedulingExplanationWithKubectl(t *testing.T) {
	c := newCluster(t)
	k := ctl{c: c, t: t}
	c.startSimNodes(t, simnode.Config{Nodes: 1, NamePrefix: "xtainted-", KubeletVersion: "v1.37.2-skiff",
		Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}})
	c.startSimNodes(t, simnode.Config{Nodes: 2, NamePrefix: "xsmall-", FirstIndex: 10, KubeletVersion: "v1.37.2-skiff"})

	mustContain(t, k.run("api-resources", "--api-group=scheduling.skiff.sh", "-o", "wide"),
		"podschedulingexplanations", "scheduling.skiff.sh/v1alpha1", "true", "PodSchedulingExplanation", "create")

	k.run("create", "namespace", "xplain")
	k.apply(`apiVersion: v1
kind: Pod
metadata: {name: big, namespace: xplain}
spec:
  containers: [{name: app, image: registry.example/app:1, resources: {requests: {cpu: "6"}}}]
`)
	const review = `apiVersion: scheduling.skiff.sh/v1alpha1
kind: PodSchedulingExplanation
metadata: {namespace: xplain}
spec: {podName: big}
`
	var got explainv1.PodSchedulingExplanation
	k.eventually(60*time.Second, func() error {
		out, err := c.kubectlIn(review, "create", "-f", "-", "-o", "json")
		if err != nil {
			return fmt.Errorf("kubectl create: %v\n%s", err, out)
		}
		got = explainv1.PodSchedulingExplanation{}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			return fmt.Errorf("decode %q: %v", out, err)
		}
		// The simulated nodes join while the explainer's caches follow them.
		seen := 0
		for _, n := range got.Status.Nodes {
			if strings.HasPrefix(n.Name, "xtainted-") || strings.HasPrefix(n.Name, "xsmall-") {
				seen++
			}
		}
		if seen != 3 {
			return fmt.Errorf("%d of the 3 simulated nodes answered for: %+v", seen, got.Status.Nodes)
		}
		return nil
	})
	for _, n := range got.Status.Nodes {
		reasons := strings.Join(n.Reasons, "; ")
		switch {
		case strings.HasPrefix(n.Name, "xtainted-"):
			if n.Feasible || !strings.Contains(reasons, "untolerated taint {dedicated: gpu}") {
				t.Errorf("tainted node %s: %+v", n.Name, n)
			}
		case strings.HasPrefix(n.Name, "xsmall-"):
			if n.Feasible || !strings.Contains(reasons, "Insufficient cpu") || strings.Contains(reasons, "taint") {
				t.Errorf("small node %s: %+v", n.Name, n)
			}
		}
	}
	if got.Status.FeasibleNodes != 0 || len(got.Status.Summary) == 0 || got.Status.Message == "" {
		t.Errorf("status %+v", got.Status)
	}

	// kubectl's unknown pod: NotFound, with the pod named.
	out, err := c.kubectlIn(strings.Replace(review, "podName: big", "podName: nope", 1), "create", "-f", "-")
	if err == nil || !strings.Contains(out, `pods "nope" not found`) {
		t.Errorf("unknown pod: %v\n%q", err, out)
	}
	// A viewer of the namespace may not create explanations (view does not grant them, nor nodes).
	k.run("create", "serviceaccount", "xviewer", "-n", "xplain")
	k.run("create", "rolebinding", "xviewer-view", "--clusterrole=view", "--serviceaccount=xplain:xviewer", "-n", "xplain")
	out, err = c.kubectlIn(review, "create", "-f", "-", "--as=system:serviceaccount:xplain:xviewer")
	if err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("viewer: %v\n%s", err, out)
	}
}
