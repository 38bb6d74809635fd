package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// protectImagePolicy allows Docker Hub's library images by default and only registry.k8s.io in
// the "locked" namespace.
const protectImagePolicy = `apiVersion: skiff.sh/v1alpha1
kind: ImagePolicy
default:
  allow: ["docker.io/library/"]
namespaces:
  locked:
    allow: ["registry.k8s.io"]
`

// errExceeded marks a create refused with the exceeded-quota message.
var errExceeded = errors.New("exceeded quota")

// protectPod is a pod named name in namespace ns; privileged sets securityContext.privileged.
func protectPod(ns, name, image string, privileged bool) string {
	sc := ""
	if privileged {
		sc = "\n    securityContext:\n      privileged: true"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  containers:
  - name: c
    image: %s%s
`, name, ns, image, sc)
}

func protectNamespace(name string, labels ...string) string {
	m := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
	if len(labels) > 0 {
		m += "  labels:\n"
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			m += fmt.Sprintf("    %s: %q\n", k, v)
		}
	}
	return m
}

// TestAdmissionProtects: with kubectl against a control-plane node, a restricted namespace
// refuses a privileged pod with PodSecurity's message and a warn-labelled one admits it with a
// warning; a quota of pods=1 refuses the second pod at once with the exceeded-quota message; a
// LimitRange's defaults land on a pod's containers; the image policy refuses a disallowed image;
// the system priority classes cannot be deleted.
func TestAdmissionProtects(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "image-policy.yaml")
	if err := os.WriteFile(policy, []byte(protectImagePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "--controllers=resourcequota", "--image-policy="+policy)

	t.Run("PodSecurity enforce", func(t *testing.T) {
		c.stdin(protectNamespace("strict", "pod-security.kubernetes.io/enforce=restricted"), "apply", "-f", "-")
		out, err := c.kubectlIn(protectPod("strict", "priv", "busybox", true), "apply", "-f", "-")
		if err == nil {
			t.Fatalf("a privileged pod was admitted in a restricted namespace:\n%s", out)
		}
		mustContain(t, out, `Error from server (Forbidden)`,
			`pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`,
			`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)`)
	})

	t.Run("PodSecurity warn", func(t *testing.T) {
		c.stdin(protectNamespace("warned", "pod-security.kubernetes.io/warn=baseline"), "apply", "-f", "-")
		out := c.stdin(protectPod("warned", "priv", "busybox", true), "apply", "-f", "-")
		mustContain(t, out, `Warning: would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`, "pod/priv created")
		// Tightening the namespace's enforce level warns about the pod already there.
		out = c.kubectl("label", "namespace", "warned", "pod-security.kubernetes.io/enforce=baseline")
		mustContain(t, out, `Warning: existing pods in namespace "warned" violate the new PodSecurity enforce level "baseline:latest"`, `Warning: priv: privileged`)
	})

	t.Run("ResourceQuota", func(t *testing.T) {
		c.stdin(protectNamespace("quota"), "apply", "-f", "-")
		c.stdin("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: one-pod\n  namespace: quota\nspec:\n  hard:\n    pods: \"1\"\n", "apply", "-f", "-")
		eventually(t, 30*time.Second, func() error {
			if used := c.kubectl("get", "resourcequota", "one-pod", "-n", "quota", "-o", "jsonpath={.status.used.pods}"); used != "0" {
				return fmt.Errorf("status.used.pods = %q", used)
			}
			return nil
		})
		c.stdin(protectPod("quota", "first", "busybox", false), "apply", "-f", "-")
		out, err := c.kubectlIn(protectPod("quota", "second", "busybox", false), "apply", "-f", "-")
		if err == nil {
			t.Fatalf("the second pod was admitted under pods=1:\n%s", out)
		}
		mustContain(t, out, `pods "second" is forbidden: exceeded quota: one-pod, requested: pods=1, used: pods=1, limited: pods=1`)
		mustContain(t, c.kubectl("get", "resourcequota", "one-pod", "-n", "quota", "-o", "jsonpath={.status.used.pods}"), "1")
	})

	t.Run("ResourceQuota under concurrent creates", func(t *testing.T) {
		c.stdin(protectNamespace("crowd"), "apply", "-f", "-")
		c.stdin("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: five\n  namespace: crowd\nspec:\n  hard:\n    pods: \"5\"\n", "apply", "-f", "-")
		eventually(t, 30*time.Second, func() error {
			if used := c.kubectl("get", "resourcequota", "five", "-n", "crowd", "-o", "jsonpath={.status.used.pods}"); used != "0" {
				return fmt.Errorf("status.used.pods = %q", used)
			}
			return nil
		})
		const creators = 16
		results := make(chan error, creators)
		for i := 0; i < creators; i++ {
			go func(i int) {
				out, err := c.kubectlIn(protectPod("crowd", fmt.Sprint("p", i), "busybox", false), "create", "-f", "-")
				if err != nil && !strings.Contains(out, "exceeded quota: five") {
					err = fmt.Errorf("%v: %s", err, out)
				} else if err != nil {
					err = errExceeded
				}
				results <- err
			}(i)
		}
		admitted := 0
		for i := 0; i < creators; i++ {
			switch err := <-results; err {
			case nil:
				admitted++
			case errExceeded:
			default:
				t.Errorf("create: %v", err)
			}
		}
		if admitted != 5 {
			t.Errorf("%d of %d concurrent creates admitted under pods=5", admitted, creators)
		}
		pods := strings.Fields(c.kubectl("get", "pods", "-n", "crowd", "-o", "name"))
		if len(pods) != 5 {
			t.Errorf("%d pods stored under pods=5: %v", len(pods), pods)
		}
		mustContain(t, c.kubectl("get", "resourcequota", "five", "-n", "crowd", "-o", "jsonpath={.status.used.pods}"), "5")
	})

	t.Run("LimitRange defaults", func(t *testing.T) {
		c.stdin(protectNamespace("limits"), "apply", "-f", "-")
		c.stdin(`apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
  namespace: limits
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m, memory: 128Mi}
    max: {cpu: "1"}
`, "apply", "-f", "-")
		c.stdin(protectPod("limits", "plain", "busybox", false), "apply", "-f", "-")
		out := c.kubectl("get", "pod", "plain", "-n", "limits", "-o", "jsonpath={.spec.containers[0].resources}")
		mustContain(t, out, `"limits":{"cpu":"500m","memory":"256Mi"}`, `"requests":{"cpu":"100m","memory":"128Mi"}`)
		mustContain(t, c.kubectl("get", "pod", "plain", "-n", "limits", "-o", `jsonpath={.metadata.annotations.kubernetes\.io/limit-ranger}`),
			"LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c")
		big := strings.Replace(protectPod("limits", "big", "busybox", false), "    image: busybox\n", "    image: busybox\n    resources:\n      limits: {cpu: \"2\"}\n", 1)
		out, err := c.kubectlIn(big, "apply", "-f", "-")
		if err == nil {
			t.Fatalf("a pod over the LimitRange's max was admitted:\n%s", out)
		}
		mustContain(t, out, `pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`)
	})

	t.Run("image policy", func(t *testing.T) {
		c.stdin(protectNamespace("locked"), "apply", "-f", "-")
		out, err := c.kubectlIn(protectPod("locked", "hub", "busybox:1.36", false), "apply", "-f", "-")
		if err == nil {
			t.Fatalf("a disallowed image was admitted:\n%s", out)
		}
		mustContain(t, out, `pods "hub" is forbidden: image policy: image "busybox:1.36" (container "c") not allowed in namespace "locked" by the namespace "locked" rule (allowed prefixes: registry.k8s.io)`)
		c.stdin(protectPod("locked", "pause", "registry.k8s.io/pause:3.10", false), "apply", "-f", "-")
	})

	t.Run("system priority classes", func(t *testing.T) {
		out, err := c.kubectlErr("delete", "priorityclass", "system-node-critical")
		if err == nil {
			t.Fatalf("system-node-critical was deleted:\n%s", out)
		}
		mustContain(t, out, `this is a system priority class and cannot be deleted`)
		mustContain(t, c.kubectl("get", "priorityclass", "system-node-critical"), "2000001000")
	})
}
