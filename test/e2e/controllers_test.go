package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/simnode"
)

const (
	// simNodes is how many schedulable simulated nodes the controllers test runs.
	simNodes = 3
	// rolloutTimeout bounds every `kubectl rollout status`.
	rolloutTimeout = "--timeout=90s"
)

// TestControllers drives the controller manager inside the real skiff with kubectl, on simulated
// nodes (fake kubelets in this process that report bound pods Running and Ready): the workflows
// issue 4 lists. Scenarios run in parallel, each in its own namespace, so the CronJob's wait for
// the next minute overlaps the rest.
//
// The same run proves that shared objects stay unmutated: the controller manager and scheduler
// read the API server's watch cache in process (one copy of each object, shared by every
// informer) and client-go's cache mutation detector is on, so every object an informer caches is
// compared each second with a copy taken when it arrived, and the server dies ("cache ...
// modified", with a diff in its log) when a component changed one instead of deep-copying it.
func TestControllers(t *testing.T) {
	// The server inherits the variable; client-go reads it when the process starts.
	t.Setenv("KUBE_CACHE_MUTATION_DETECTOR", "true")
	c := newSimNodeCluster(t)

	t.Run("scenarios", func(t *testing.T) {
		t.Run("cronjob fires", func(t *testing.T) { t.Parallel(); testCronJob(ctl{c: c, t: t}) })
		t.Run("node lifecycle", func(t *testing.T) { t.Parallel(); testNodeLifecycle(ctl{c: c, t: t}) })
		t.Run("deployment rollout", func(t *testing.T) { t.Parallel(); testDeploymentRollout(ctl{c: c, t: t}) })
		t.Run("cascading deletion", func(t *testing.T) { t.Parallel(); testCascadingDeletion(ctl{c: c, t: t}) })
		t.Run("namespace deletion", func(t *testing.T) { t.Parallel(); testNamespaceDeletion(ctl{c: c, t: t}) })
		t.Run("job completes", func(t *testing.T) { t.Parallel(); testJob(ctl{c: c, t: t}) })
		t.Run("daemonset", func(t *testing.T) { t.Parallel(); testDaemonSet(ctl{c: c, t: t}) })
		t.Run("statefulset", func(t *testing.T) { t.Parallel(); testStatefulSet(ctl{c: c, t: t}) })
		t.Run("endpoints", func(t *testing.T) { t.Parallel(); testEndpoints(ctl{c: c, t: t}) })
		t.Run("endpointslice mirroring", func(t *testing.T) { t.Parallel(); testEndpointSliceMirroring(ctl{c: c, t: t}) })
		t.Run("replicationcontroller", func(t *testing.T) { t.Parallel(); testReplicationController(ctl{c: c, t: t}) })
	})
	// The detector panics the whole server: it must still answer, and its log must not hold a diff.
	if out, err := c.kubectlErr("get", "--raw", "/readyz"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("server no longer ready after the scenarios (%v %q); log:\n%s", err, out, c.log())
	}
	if log := c.logAll(); strings.Contains(log, "ALTERED!") || strings.Contains(log, "panic: cache ") {
		t.Fatalf("a component mutated an object from its informer cache:\n%s", c.log())
	}
	if !strings.Contains(c.logAll(), "watch cache in process") {
		t.Fatalf("the controller manager and scheduler did not read the watch cache in process; log:\n%s", c.log())
	}
}

func testDeploymentRollout(root ctl) {
	k := root.namespace("rollout")
	t := k.t
	k.run("create", "deployment", "web", "--image=registry.example/web:v1", "--replicas=3")
	mustContain(t, k.run("rollout", "status", "deployment/web", rolloutTimeout), `deployment "web" successfully rolled out`)
	if got := k.jsonpath("{.status.availableReplicas}", "deployment", "web"); got != "3" {
		t.Fatalf("available replicas after rollout = %q, want 3", got)
	}

	k.run("set", "image", "deployment/web", "web=registry.example/web:v2")
	mustContain(t, k.run("rollout", "status", "deployment/web", rolloutTimeout), "successfully rolled out")
	if got := podImages(k, "app=web"); !allEqual(got, "registry.example/web:v2", 3) {
		t.Fatalf("pod images after set image = %v, want 3 x v2", got)
	}
	history := k.run("rollout", "history", "deployment/web")
	mustContain(t, history, "REVISION", "CHANGE-CAUSE")
	if revs := historyRevisions(history); !slices.Equal(revs, []string{"1", "2"}) {
		t.Fatalf("rollout history revisions = %v, want [1 2]:\n%s", revs, history)
	}
	mustContain(t, k.run("rollout", "history", "deployment/web", "--revision=1"), "registry.example/web:v1")

	mustContain(t, k.run("rollout", "undo", "deployment/web"), "rolled back")
	mustContain(t, k.run("rollout", "status", "deployment/web", rolloutTimeout), "successfully rolled out")
	if got := k.jsonpath("{.spec.template.spec.containers[0].image}", "deployment", "web"); got != "registry.example/web:v1" {
		t.Fatalf("image after undo = %q, want v1", got)
	}
	if got := podImages(k, "app=web"); !allEqual(got, "registry.example/web:v1", 3) {
		t.Fatalf("pod images after undo = %v, want 3 x v1", got)
	}
	// Rolling back re-uses revision 1's ReplicaSet as revision 3.
	if revs := historyRevisions(k.run("rollout", "history", "deployment/web")); !slices.Equal(revs, []string{"2", "3"}) {
		t.Fatalf("revisions after undo = %v, want [2 3]", revs)
	}

	// Paused: a template change is recorded but not rolled out.
	k.run("rollout", "pause", "deployment/web")
	replicaSetsBefore := len(fields(k.run("get", "replicasets", "-l", "app=web", "-o", "name")))
	k.run("set", "image", "deployment/web", "web=registry.example/web:v3")
	k.eventually(30*time.Second, func() error {
		gen := k.jsonpath("{.metadata.generation}", "deployment", "web")
		observed := k.jsonpath("{.status.observedGeneration}", "deployment", "web")
		reason := k.jsonpath(`{.status.conditions[?(@.type=="Progressing")].reason}`, "deployment", "web")
		if gen != observed || reason != "DeploymentPaused" {
			return fmt.Errorf("generation %s observed %s, Progressing reason %q", gen, observed, reason)
		}
		return nil
	})
	if n := len(fields(k.run("get", "replicasets", "-l", "app=web", "-o", "name"))); n != replicaSetsBefore {
		t.Fatalf("a paused deployment made ReplicaSets: %d -> %d", replicaSetsBefore, n)
	}
	if got := podImages(k, "app=web"); !allEqual(got, "registry.example/web:v1", 3) {
		t.Fatalf("pods of a paused deployment changed: %v", got)
	}
	k.run("rollout", "resume", "deployment/web")
	mustContain(t, k.run("rollout", "status", "deployment/web", rolloutTimeout), "successfully rolled out")
	if got := podImages(k, "app=web"); !allEqual(got, "registry.example/web:v3", 3) {
		t.Fatalf("pod images after resume = %v, want 3 x v3", got)
	}

	// Restart: a new ReplicaSet with the same image, every pod replaced.
	oldPods := fields(k.run("get", "pods", "-l", "app=web", "-o", "name"))
	mustContain(t, k.run("rollout", "restart", "deployment/web"), "restarted")
	mustContain(t, k.run("rollout", "status", "deployment/web", rolloutTimeout), "successfully rolled out")
	if k.jsonpath(`{.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}`, "deployment", "web") == "" {
		t.Fatal("rollout restart did not set the restartedAt annotation")
	}
	k.eventually(60*time.Second, func() error {
		now := fields(k.run("get", "pods", "-l", "app=web", "-o", "name"))
		for _, p := range now {
			if slices.Contains(oldPods, p) {
				return fmt.Errorf("pod %s survived the restart (pods %v)", p, now)
			}
		}
		if len(now) != 3 {
			return fmt.Errorf("pods after restart %v, want 3", now)
		}
		return nil
	})

	// Scale up and down.
	k.run("scale", "deployment/web", "--replicas=5")
	mustContain(t, k.run("rollout", "status", "deployment/web", rolloutTimeout), "successfully rolled out")
	waitDeploymentPods(k, "web", "app=web", 5)
	k.run("scale", "deployment/web", "--replicas=2")
	waitDeploymentPods(k, "web", "app=web", 2)
}

// waitDeploymentPods waits until the deployment reports want available replicas and exactly want
// pods match the selector.
func waitDeploymentPods(k ctl, name, selector string, want int) {
	k.t.Helper()
	k.eventually(60*time.Second, func() error {
		avail := k.jsonpath("{.status.availableReplicas}", "deployment", name)
		pods := fields(k.run("get", "pods", "-l", selector, "-o", "name"))
		if avail != strconv.Itoa(want) || len(pods) != want {
			return fmt.Errorf("available %q, pods %v; want %d", avail, pods, want)
		}
		return nil
	})
}

func testCascadingDeletion(root ctl) {
	k := root.namespace("cascade")
	t := k.t
	k.run("create", "deployment", "fg", "--image=registry.example/fg:v1", "--replicas=2")
	k.run("create", "deployment", "orphan", "--image=registry.example/orphan:v1", "--replicas=2")
	k.run("rollout", "status", "deployment/fg", rolloutTimeout)
	k.run("rollout", "status", "deployment/orphan", rolloutTimeout)

	// Foreground: kubectl waits until the deployment is gone, which the garbage collector allows
	// only after its ReplicaSet, and that only after the pods.
	k.run("delete", "deployment", "fg", "--cascade=foreground", "--timeout=90s")
	if out := k.run("get", "replicasets,pods", "-l", "app=fg", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Fatalf("dependents outlived a foreground-deleted deployment:\n%s", out)
	}

	// Orphan: the ReplicaSet and its pods stay; the ReplicaSet loses its owner reference.
	rs := strings.TrimSpace(k.run("get", "replicasets", "-l", "app=orphan", "-o", "name"))
	if rs == "" {
		t.Fatal("no ReplicaSet for deployment orphan")
	}
	k.run("delete", "deployment", "orphan", "--cascade=orphan", "--timeout=60s")
	if _, err := k.try("get", "deployment", "orphan"); err == nil {
		t.Fatal("deployment orphan still exists after delete")
	}
	if refs := k.jsonpath("{.metadata.ownerReferences}", rs); refs != "" {
		t.Fatalf("orphaned %s still has owner references: %s", rs, refs)
	}
	// Wait a little for a garbage collector that would wrongly delete them anyway.
	time.Sleep(2 * time.Second)
	if got := fields(k.run("get", "pods", "-l", "app=orphan", "-o", "name")); len(got) != 2 {
		t.Fatalf("pods of the orphaned ReplicaSet = %v, want 2", got)
	}
	if got := k.jsonpath("{.status.readyReplicas}", rs); got != "2" {
		t.Fatalf("orphaned ReplicaSet ready replicas = %q, want 2", got)
	}
}

func testNamespaceDeletion(root ctl) {
	k := root.namespace("doomed")
	t := k.t
	k.run("create", "deployment", "app", "--image=registry.example/app:v1", "--replicas=2")
	k.run("create", "configmap", "plain", "--from-literal=a=b")
	k.run("create", "service", "clusterip", "app", "--tcp=80:8080")
	k.run("rollout", "status", "deployment/app", rolloutTimeout)
	// A finalizer nobody removes holds the namespace in Terminating, so the test can see it there.
	k.apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: held, finalizers: [e2e.skiff.sh/hold]}
`)

	root.run("delete", "namespace", "doomed", "--wait=false")
	out, err := k.try("create", "configmap", "late", "--from-literal=a=b")
	if err == nil {
		t.Fatalf("creating into a terminating namespace succeeded:\n%s", out)
	}
	mustContain(t, out, "is forbidden", "because it is being terminated")

	k.eventually(90*time.Second, func() error {
		out, err := k.try("get", "deployments,replicasets,pods,services,configmaps", "-o", "name")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if left := fields(out); !slices.Equal(left, []string{"configmap/held"}) {
			return fmt.Errorf("left in the namespace: %v", left)
		}
		return nil
	})
	if phase := root.jsonpath("{.status.phase}", "namespace", "doomed"); phase != "Terminating" {
		t.Fatalf("namespace phase = %q, want Terminating", phase)
	}
	k.eventually(30*time.Second, func() error {
		status := root.jsonpath(`{.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].status}`, "namespace", "doomed")
		if status != "True" {
			return fmt.Errorf("NamespaceFinalizersRemaining = %q, want True", status)
		}
		return nil
	})
	k.run("patch", "configmap", "held", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	k.eventually(60*time.Second, func() error {
		if out, err := root.try("get", "namespace", "doomed"); err == nil {
			return fmt.Errorf("namespace still exists:\n%s", out)
		}
		return nil
	})
}

const jobYAML = `apiVersion: batch/v1
kind: Job
metadata: {name: count}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: registry.example/count:v1}]
`

func testJob(root ctl) {
	k := root.namespace("batch")
	t := k.t
	k.apply(jobYAML)
	k.run("wait", "--for=condition=complete", "job/count", "--timeout=90s")
	if got := k.jsonpath("{.status.succeeded}", "job", "count"); got != "3" {
		t.Fatalf("succeeded = %q, want 3", got)
	}
	pods := fields(k.jsonpath("{.items[*].status.phase}", "pods", "-l", "batch.kubernetes.io/job-name=count"))
	if !allEqual(pods, "Succeeded", 3) {
		t.Fatalf("job pod phases = %v, want 3 x Succeeded", pods)
	}
}

func testCronJob(root ctl) {
	k := root.namespace("cron")
	t := k.t
	k.apply(`apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: registry.example/tick:v1}]
`)
	// The schedule fires at the next minute boundary: at most 60 s away.
	k.eventually(100*time.Second, func() error {
		if k.jsonpath("{.status.lastSuccessfulTime}", "cronjob", "tick") == "" {
			return fmt.Errorf("no successful run yet; jobs: %s", k.run("get", "jobs", "--no-headers"))
		}
		return nil
	})
	jobs := fields(k.run("get", "jobs", "-o", "name"))
	if len(jobs) == 0 {
		t.Fatal("cronjob reports success but no Job exists")
	}
	owner := k.jsonpath("{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}", jobs[0])
	if owner != "CronJob/tick" {
		t.Fatalf("%s owner = %q, want CronJob/tick", jobs[0], owner)
	}
	k.run("wait", "--for=condition=complete", jobs[0], "--timeout=30s")
}

func testDaemonSet(root ctl) {
	k := root.namespace("daemons")
	t := k.t
	k.apply(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, image: registry.example/agent:v1}]
`)
	mustContain(t, k.run("rollout", "status", "daemonset/agent", rolloutTimeout), "successfully rolled out")
	nodes := fields(k.jsonpath("{.items[*].spec.nodeName}", "pods", "-l", "app=agent"))
	slices.Sort(nodes)
	want := []string{"sim-0", "sim-1", "sim-2"}
	if !slices.Equal(nodes, want) {
		t.Fatalf("daemon pods on nodes %v, want one on each of %v", nodes, want)
	}
	if got := k.jsonpath("{.status.numberAvailable}/{.status.desiredNumberScheduled}", "daemonset", "agent"); got != "3/3" {
		t.Fatalf("available/desired = %s, want 3/3", got)
	}
}

func testStatefulSet(root ctl) {
	k := root.namespace("stateful")
	t := k.t
	k.apply(`apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: registry.example/web:v1
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`)
	mustContain(t, k.run("rollout", "status", "statefulset/web", rolloutTimeout), "partitioned roll out complete")
	var pods struct {
		Items []corev1.Pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(k.run("get", "pods", "-l", "app=web", "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		byName[p.Name] = p
	}
	web0, ok0 := byName["web-0"]
	web1, ok1 := byName["web-1"]
	if !ok0 || !ok1 || len(byName) != 2 {
		t.Fatalf("stateful pods = %v, want web-0 and web-1", keys(byName))
	}
	// OrderedReady: web-1 is created only once web-0 is Ready.
	ready0 := readySince(web0)
	if ready0.IsZero() || web1.CreationTimestamp.Time.Before(ready0) {
		t.Fatalf("web-1 created at %s, before web-0 was Ready (%s)", web1.CreationTimestamp, ready0)
	}
	claims := fields(k.jsonpath("{.items[*].metadata.name}", "pvc"))
	slices.Sort(claims)
	if !slices.Equal(claims, []string{"data-web-0", "data-web-1"}) {
		t.Fatalf("claims = %v, want data-web-0 data-web-1", claims)
	}
	for _, p := range []corev1.Pod{web0, web1} {
		var claim string
		for _, v := range p.Spec.Volumes {
			if v.Name == "data" && v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		if claim != "data-"+p.Name {
			t.Fatalf("pod %s mounts claim %q, want data-%s", p.Name, claim, p.Name)
		}
	}
}

func testEndpoints(root ctl) {
	k := root.namespace("endpoints")
	t := k.t
	k.run("create", "deployment", "ep", "--image=registry.example/ep:v1", "--replicas=3", "--port=8080")
	k.apply(`apiVersion: v1
kind: Service
metadata: {name: ep}
spec:
  selector: {app: ep}
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
	k.run("rollout", "status", "deployment/ep", rolloutTimeout)
	podIPs := fields(k.jsonpath("{.items[*].status.podIP}", "pods", "-l", "app=ep"))
	slices.Sort(podIPs)
	if len(podIPs) != 3 {
		t.Fatalf("pod IPs = %v, want 3", podIPs)
	}
	k.eventually(30*time.Second, func() error {
		ips := fields(k.jsonpath("{.subsets[*].addresses[*].ip}", "endpoints", "ep"))
		slices.Sort(ips)
		if !slices.Equal(ips, podIPs) {
			return fmt.Errorf("endpoints addresses %v, want %v", ips, podIPs)
		}
		return nil
	})
	if port := k.jsonpath("{.subsets[0].ports[0].name}:{.subsets[0].ports[0].port}", "endpoints", "ep"); port != "http:8080" {
		t.Fatalf("endpoints port = %q, want http:8080", port)
	}
	k.eventually(30*time.Second, func() error {
		ips := fields(k.jsonpath("{.items[*].endpoints[*].addresses[*]}", "endpointslices", "-l", "kubernetes.io/service-name=ep"))
		slices.Sort(ips)
		if !slices.Equal(ips, podIPs) {
			return fmt.Errorf("endpointslice addresses %v, want %v", ips, podIPs)
		}
		return nil
	})
	ready := fields(k.jsonpath("{.items[*].endpoints[*].conditions.ready}", "endpointslices", "-l", "kubernetes.io/service-name=ep"))
	if !allEqual(ready, "true", 3) {
		t.Fatalf("endpointslice ready conditions = %v, want 3 x true", ready)
	}
	mustContain(t, k.run("get", "endpoints", "ep"), "ep", ":8080")
}

// testEndpointSliceMirroring: hand-written Endpoints of a selectorless Service appear as an
// EndpointSlice, follow an update and go with the Endpoints, as the conformance mirroring spec checks.
func testEndpointSliceMirroring(root ctl) {
	k := root.namespace("mirror")
	k.apply(`apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext, labels: {team: a}}
subsets:
- addresses: [{ip: 192.0.2.10}]
  ports: [{name: http, port: 8080}]
`)
	slice := func() string {
		return k.jsonpath("{.items[*].metadata.labels.endpointslice\\.kubernetes\\.io/managed-by} {.items[*].metadata.labels.team} {.items[*].endpoints[*].addresses[*]} {.items[*].ports[*].port}",
			"endpointslices", "-l", "kubernetes.io/service-name=ext")
	}
	k.eventually(30*time.Second, func() error {
		if got := slice(); got != "endpointslicemirroring-controller.k8s.io a 192.0.2.10 8080" {
			return fmt.Errorf("mirrored slice = %q", got)
		}
		return nil
	})
	k.run("patch", "endpoints", "ext", "--type=json", `-p=[{"op":"replace","path":"/subsets/0/addresses/0/ip","value":"192.0.2.11"}]`)
	k.eventually(30*time.Second, func() error {
		if got := slice(); got != "endpointslicemirroring-controller.k8s.io a 192.0.2.11 8080" {
			return fmt.Errorf("mirrored slice after the update = %q", got)
		}
		return nil
	})
	k.run("delete", "endpoints", "ext")
	k.eventually(30*time.Second, func() error {
		if got := strings.TrimSpace(slice()); got != "" {
			return fmt.Errorf("mirrored slice after the delete = %q", got)
		}
		return nil
	})
}

func testNodeLifecycle(root ctl) {
	t := root.t
	// A node of its own, tainted so no workload of the other scenarios lands on it.
	sim := root.c.startSimNodes(t, simnode.Config{
		Nodes: 1, NamePrefix: "lost-", FirstIndex: 100, HeartbeatInterval: 2 * time.Second,
		Taints: []corev1.Taint{{Key: "e2e.skiff.sh/isolated", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
	})
	node := "node/" + sim.NodeNames()[0]
	root.eventually(60*time.Second, func() error {
		if got := root.jsonpath(`{.status.conditions[?(@.type=="Ready")].status}`, node); got != "True" {
			return fmt.Errorf("%s Ready = %q", node, got)
		}
		return nil
	})
	sim.Stop()
	// Grace period 15 s plus the controller's 5 s monitor period, with slack for a loaded machine.
	root.eventually(60*time.Second, func() error {
		if got := root.jsonpath(`{.status.conditions[?(@.type=="Ready")].status}`, node); got != "Unknown" {
			return fmt.Errorf("%s Ready = %q, want Unknown", node, got)
		}
		taints := root.jsonpath(`{range .spec.taints[*]}{.key}:{.effect} {end}`, node)
		for _, want := range []string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"} {
			if !slices.Contains(fields(taints), want) {
				return fmt.Errorf("%s taints %q lack %s", node, taints, want)
			}
		}
		return nil
	})
}

// podImages lists the first container image of every pod matching selector that is not being
// deleted.
func podImages(k ctl, selector string) []string {
	k.t.Helper()
	var pods struct {
		Items []corev1.Pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(k.run("get", "pods", "-l", selector, "-o", "json")), &pods); err != nil {
		k.t.Fatal(err)
	}
	var images []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			images = append(images, p.Spec.Containers[0].Image)
		}
	}
	return images
}

// historyRevisions reads the REVISION column of `kubectl rollout history`.
func historyRevisions(out string) []string {
	var revs []string
	for _, line := range strings.Split(out, "\n") {
		f := fields(line)
		if len(f) > 0 {
			if _, err := strconv.Atoi(f[0]); err == nil {
				revs = append(revs, f[0])
			}
		}
	}
	return revs
}

func allEqual(got []string, want string, n int) bool {
	if len(got) != n {
		return false
	}
	for _, g := range got {
		if g != want {
			return false
		}
	}
	return true
}

func readySince(p corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// newSimNodeCluster starts a node (short node grace period) with simNodes simulated nodes that
// complete Job pods, and waits until they are all Ready: the setup of the controller scenarios.
func newSimNodeCluster(t *testing.T) *cluster {
	t.Helper()
	c := newCluster(t, "--node-monitor-grace-period=15s")
	c.startSimNodes(t, simnode.Config{
		Nodes: simNodes, NamePrefix: "sim-", HeartbeatInterval: 2 * time.Second,
		CompletePods: completeJobPods(time.Second),
	})
	root := ctl{c: c, t: t}
	root.eventually(60*time.Second, func() error {
		out, err := root.try("get", "nodes", "--no-headers")
		if err != nil {
			return err
		}
		if n := strings.Count(out, " Ready "); n != simNodes {
			return fmt.Errorf("want %d Ready nodes:\n%s", simNodes, out)
		}
		return nil
	})
	return c
}
