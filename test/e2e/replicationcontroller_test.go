package e2e

import (
	"fmt"
	"strings"
	"time"
)

const rcManifest = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 2
  template:
    metadata:
      labels:
        app: rc-web
    spec:
      containers:
      - name: web
        image: registry.example/rc-web:v1
`

// testReplicationController is the RC life cycle with kubectl on simulated nodes: created with the
// defaults (selector from the template), its pods scheduled and running, scaled both ways with
// `kubectl scale rc`, and its pods deleted with it by the garbage collector.
func testReplicationController(root ctl) {
	k := root.namespace("rc")
	t := k.t
	mustContain(t, k.run("explain", "rc.spec.selector"), "KIND:", "ReplicationController", "FIELD: selector <map[string]string>")
	k.apply(rcManifest)
	if got := k.jsonpath("{.spec.selector.app}", "rc", "web"); got != "rc-web" {
		t.Fatalf("selector not defaulted from the template: %q", got)
	}
	readyPods := func(want int) {
		k.eventually(60*time.Second, func() error {
			ready := k.jsonpath("{.status.readyReplicas}", "rc", "web")
			pods := fields(k.run("get", "pods", "-l", "app=rc-web", "-o", "jsonpath={range .items[*]}{.spec.nodeName}={.status.phase} {end}"))
			running := 0
			for _, p := range pods {
				if strings.HasPrefix(p, "sim-") && strings.HasSuffix(p, "=Running") {
					running++
				}
			}
			if ready != fmt.Sprint(want) || len(pods) != want || running != want {
				return fmt.Errorf("ready %q, pods %v; want %d running on simulated nodes", ready, pods, want)
			}
			return nil
		})
	}
	readyPods(2)
	out := k.run("get", "rc", "web")
	mustContain(t, out, "NAME", "DESIRED", "CURRENT", "READY", "AGE")
	if f := fields(strings.Split(strings.TrimSpace(out), "\n")[1]); len(f) != 5 || f[0] != "web" || f[1] != "2" || f[2] != "2" || f[3] != "2" {
		t.Fatalf("kubectl get rc row = %v", f)
	}
	mustContain(t, k.run("get", "rc", "web", "-o", "wide"), "CONTAINERS", "IMAGES", "SELECTOR", "registry.example/rc-web:v1", "app=rc-web")
	mustContain(t, k.run("get", "all"), "replicationcontroller/web")
	owner := k.jsonpath("{.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name}", "pods", "-l", "app=rc-web")
	if owner != "ReplicationController/web" {
		t.Fatalf("pod owner = %q", owner)
	}

	// kubectl debug adds an ephemeral container through pods/ephemeralcontainers (a strategic
	// merge patch); simulated nodes do not run it, so it is not attached to.
	pod := k.jsonpath("{.items[0].metadata.name}", "pods", "-l", "app=rc-web")
	k.run("debug", pod, "--image=registry.example/debug:v1", "--target=web", "--container=debugger")
	if got := k.jsonpath("{.spec.ephemeralContainers[0].name}={.spec.ephemeralContainers[0].targetContainerName}", "pod", pod); got != "debugger=web" {
		t.Fatalf("ephemeral container after kubectl debug = %q", got)
	}
	if _, err := k.try("debug", pod, "--image=registry.example/debug:v1", "--container=web"); err == nil {
		t.Fatal("kubectl debug reused a container's name")
	}

	mustContain(t, k.run("scale", "rc", "web", "--replicas=4"), "scaled")
	readyPods(4)
	k.run("scale", "rc", "web", "--replicas=1")
	readyPods(1)

	k.run("delete", "rc", "web")
	k.eventually(60*time.Second, func() error {
		if out := strings.TrimSpace(k.run("get", "pods", "-l", "app=rc-web", "-o", "name")); out != "" {
			return fmt.Errorf("pods outlived their RC:\n%s", out)
		}
		return nil
	})
}
