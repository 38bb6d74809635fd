package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/version"

	"github.com/skiff-sh/skiff/internal/proxy"
)

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: localhost/busybox:local
        ports: [{containerPort: 80}]
`

func deployment(replicas string) string {
	return strings.ReplaceAll(deploymentYAML, "REPLICAS", replicas)
}

// TestKubectl drives one control plane through the kubectl workflows issue 2 lists. Only the
// serviceaccount controller runs, so what the test sees is the API server's doing alone (no
// deployment controller writing status, no garbage collector finishing foreground deletions).
func TestKubectl(t *testing.T) {
	c := newCluster(t, "--controllers=serviceaccount")

	t.Run("version and health", func(t *testing.T) {
		out := c.kubectl("version", "-o", "json")
		var v struct {
			ServerVersion struct{ Major, Minor, GitVersion string } `json:"serverVersion"`
		}
		// The output is stdout and stderr together: a version-skew warning would break the JSON.
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("version output: %v\n%s", err, out)
		}
		if v.ServerVersion.Major != version.Major || v.ServerVersion.Minor != version.Minor || v.ServerVersion.GitVersion != version.GitVersion {
			t.Fatalf("server version %+v, want %s", v.ServerVersion, version.GitVersion)
		}
		mustContain(t, c.kubectl("get", "--raw", "/livez"), "ok")
	})

	t.Run("api-resources", func(t *testing.T) {
		out := c.kubectl("api-resources")
		for _, want := range []string{
			"pods  ", "po ", "deployments", "deploy", "apps/v1", "cronjobs", "cj", "batch/v1",
			"configmaps", "cm", "namespaces", "ns", "persistentvolumeclaims", "pvc",
		} {
			mustContain(t, out, want)
		}
		out = c.kubectl("api-resources", "--namespaced=false", "-o", "name")
		mustContain(t, out, "namespaces", "nodes", "persistentvolumes")
		mustNotContain(t, out, "\npods\n")
	})

	t.Run("explain", func(t *testing.T) {
		out := c.kubectl("explain", "pods.spec.containers.image")
		mustContain(t, out, "KIND:", "Pod", "FIELD: image <string>")
		out = c.kubectl("explain", "deployment.spec.strategy")
		mustContain(t, out, "GROUP:      apps", "DeploymentStrategy", "rollingUpdate")
	})

	t.Run("system namespaces exist", func(t *testing.T) {
		out := c.kubectl("get", "namespaces")
		mustContain(t, out, "default", "kube-system", "kube-public", "kube-node-lease", "Active")
	})

	t.Run("create and apply lifecycle", func(t *testing.T) {
		mustContain(t, c.stdin(deployment("2"), "apply", "-f", "-"), "deployment.apps/web created")
		mustContain(t, c.stdin(deployment("2"), "apply", "-f", "-"), "deployment.apps/web unchanged")
		mustContain(t, c.stdin(deployment("3"), "apply", "-f", "-"), "deployment.apps/web configured")
		if got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); got != "3 2" {
			t.Fatalf("replicas and generation = %q, want \"3 2\"", got)
		}
		out := c.kubectl("get", "deployments")
		mustContain(t, out, "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "web", "0/3")
		out = c.kubectl("get", "deploy", "web", "-o", "wide")
		mustContain(t, out, "CONTAINERS", "IMAGES", "SELECTOR", "localhost/busybox:local", "app=web")
		mustContain(t, c.kubectl("create", "configmap", "settings", "--from-literal=mode=fast"), "configmap/settings created")
		out, err := c.kubectlErr("create", "configmap", "settings", "--from-literal=mode=fast")
		if err == nil {
			t.Fatal("duplicate create succeeded")
		}
		mustContain(t, out, `configmaps "settings" already exists`)
	})

	t.Run("server-side apply conflicts", func(t *testing.T) {
		mustContain(t, c.stdin(deployment("3"), "apply", "--server-side", "--field-manager=team-a", "-f", "-"), "serverside-applied")
		out, err := c.kubectlIn(deployment("5"), "apply", "--server-side", "--field-manager=team-b", "-f", "-")
		if err == nil {
			t.Fatalf("conflicting apply succeeded:\n%s", out)
		}
		mustContain(t, out, "Apply failed with 1 conflict", `conflict with "team-a"`, ".spec.replicas")
		mustContain(t, c.stdin(deployment("5"), "apply", "--server-side", "--field-manager=team-b", "--force-conflicts", "-f", "-"), "serverside-applied")
		if got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "5" {
			t.Fatalf("replicas after forced apply = %q", got)
		}
		managers := c.kubectl("get", "deploy", "web", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}")
		mustContain(t, managers, "team-a", "team-b")
	})

	t.Run("get output formats and selectors", func(t *testing.T) {
		c.kubectl("create", "configmap", "alpha", "--from-literal=k=v")
		c.kubectl("create", "configmap", "beta", "--from-literal=k=v")
		c.kubectl("label", "configmap", "alpha", "tier=front")
		mustContain(t, c.kubectl("get", "cm", "alpha", "-o", "yaml"), "kind: ConfigMap", "name: alpha", "tier: front", "resourceVersion:", "uid:")
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.kubectl("get", "cm", "alpha", "-o", "json")), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] != "ConfigMap" || obj["apiVersion"] != "v1" {
			t.Fatalf("json output has kind %v apiVersion %v", obj["kind"], obj["apiVersion"])
		}
		if got := c.kubectl("get", "cm", "-l", "tier=front", "-o", "name"); strings.TrimSpace(got) != "configmap/alpha" {
			t.Fatalf("label selector gave %q", got)
		}
		if got := c.kubectl("get", "cm", "--field-selector", "metadata.name=beta", "-o", "name"); strings.TrimSpace(got) != "configmap/beta" {
			t.Fatalf("field selector gave %q", got)
		}
		out, err := c.kubectlErr("get", "cm", "--field-selector", "spec.nonsense=1")
		if err == nil {
			t.Fatal("unsupported field selector accepted")
		}
		mustContain(t, out, "field label not supported: spec.nonsense")
		chunked := c.kubectl("get", "cm", "--chunk-size=1", "-o", "name")
		for _, want := range []string{"configmap/alpha", "configmap/beta", "configmap/settings"} {
			mustContain(t, chunked, want)
		}
		mustContain(t, c.kubectl("get", "cm", "-o", "jsonpath={.items[*].metadata.name}"), "alpha beta")
	})

	t.Run("watch", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := c.kubectlCmd(ctx, "", "get", "cm", "-w", "--output-watch-events")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		lines := make(chan string, 100)
		go func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		waitLine := func(want ...string) {
			t.Helper()
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("watch ended before %v", want)
					}
					all := true
					for _, w := range want {
						all = all && strings.Contains(l, w)
					}
					if all {
						return
					}
				case <-ctx.Done():
					t.Fatalf("no watch line with %v", want)
				}
			}
		}
		waitLine("ADDED", "alpha")
		c.kubectl("create", "configmap", "watched")
		waitLine("ADDED", "watched")
		c.kubectl("label", "configmap", "watched", "x=y")
		waitLine("MODIFIED", "watched")
		c.kubectl("delete", "configmap", "watched")
		waitLine("DELETED", "watched")
	})

	t.Run("describe label annotate", func(t *testing.T) {
		mustContain(t, c.kubectl("annotate", "cm", "alpha", "owner=ops"), "configmap/alpha annotated")
		mustContain(t, c.kubectl("label", "cm", "alpha", "tier=back", "--overwrite"), "configmap/alpha labeled")
		out := c.kubectl("describe", "configmap", "alpha")
		mustContain(t, out, "Name:", "alpha", "tier=back", "owner: ops")
		out = c.kubectl("describe", "deployment", "web")
		mustContain(t, out, "Replicas:", "5 desired", "StrategyType:", "RollingUpdate", "localhost/busybox:local")
	})

	t.Run("patch types and status subresource", func(t *testing.T) {
		c.kubectl("patch", "deploy", "web", "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":2}]`)
		c.kubectl("patch", "deploy", "web", "--type=merge", "-p", `{"spec":{"minReadySeconds":3}}`)
		c.kubectl("patch", "deploy", "web", "--type=strategic", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"localhost/busybox:v2"}]}}}}`)
		got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas} {.spec.minReadySeconds} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}")
		if got != "2 3 localhost/busybox:v2 80" {
			t.Fatalf("after patches: %q", got)
		}
		gen := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.metadata.generation}")
		c.kubectl("patch", "deploy", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":9,"observedGeneration":1}}`)
		if got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.status.replicas} {.metadata.generation}"); got != "9 "+gen {
			t.Fatalf("status patch gave %q (generation must stay %s)", got, gen)
		}
		// A status change through the main resource is ignored.
		c.kubectl("patch", "deploy", "web", "--type=merge", "-p", `{"status":{"replicas":1}}`)
		if got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.status.replicas}"); got != "9" {
			t.Fatalf("main-resource patch changed status to %q", got)
		}
		out, err := c.kubectlErr("patch", "deploy", "web", "--type=json", "-p", `[{"op":"test","path":"/spec/replicas","value":99}]`)
		if err == nil {
			t.Fatal("failing json patch test op succeeded")
		}
		mustContain(t, out, "testing value /spec/replicas failed")
	})

	t.Run("scale", func(t *testing.T) {
		mustContain(t, c.kubectl("scale", "deploy", "web", "--replicas=4"), "deployment.apps/web scaled")
		if got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "4" {
			t.Fatalf("replicas after scale = %q", got)
		}
		out, err := c.kubectlErr("scale", "deploy", "web", "--replicas=1", "--current-replicas=3")
		if err == nil {
			t.Fatalf("scale with wrong --current-replicas succeeded: %s", out)
		}
	})

	t.Run("replace with a stale object", func(t *testing.T) {
		stale := c.kubectl("get", "cm", "beta", "-o", "yaml")
		c.kubectl("label", "cm", "beta", "touched=yes")
		out, err := c.kubectlIn(stale, "replace", "-f", "-")
		if err == nil {
			t.Fatalf("stale replace succeeded:\n%s", out)
		}
		mustContain(t, out, "Conflict", "the object has been modified; please apply your changes to the latest version and try again")
		fresh := c.kubectl("get", "cm", "beta", "-o", "yaml")
		mustContain(t, c.stdin(strings.Replace(fresh, "k: v", "k: w", 1), "replace", "-f", "-"), "configmap/beta replaced")
	})

	t.Run("diff", func(t *testing.T) {
		out, err := c.kubectlIn(deployment("7"), "diff", "-f", "-")
		if err == nil {
			t.Fatal("diff of a changed manifest exited 0")
		}
		mustContain(t, out, "-  replicas: 4", "+  replicas: 7")
		if got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "4" {
			t.Fatalf("diff changed the object: replicas %q", got)
		}
	})

	t.Run("dry-run server", func(t *testing.T) {
		mustContain(t, c.kubectl("create", "configmap", "ghost", "--dry-run=server", "-o", "name"), "configmap/ghost")
		out, err := c.kubectlErr("get", "cm", "ghost")
		if err == nil {
			t.Fatal("dry-run create persisted the object")
		}
		mustContain(t, out, `configmaps "ghost" not found`)
		c.kubectl("scale", "deploy", "web", "--replicas=8", "--dry-run=server")
		if got := c.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "4" {
			t.Fatalf("dry-run scale persisted: %q", got)
		}
		c.kubectl("delete", "cm", "alpha", "--dry-run=server")
		c.kubectl("get", "cm", "alpha")
	})

	t.Run("invalid requests", func(t *testing.T) {
		cases := []struct {
			manifest string
			wants    []string
		}{
			{"apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec:\n  containers: [{name: c}]\n",
				[]string{`The Pod "Bad_Name" is invalid`, "metadata.name: Invalid value: \"Bad_Name\"", "spec.containers[0].image: Required value"}},
			{"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x, bogus: 1}]\n",
				[]string{"strict decoding error", `unknown field "spec.containers[0].bogus"`}},
			{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: c}}\n    spec:\n      containers: [{name: c, image: x}]\n",
				[]string{`The Deployment "d" is invalid`, "spec.template.metadata.labels", "`selector` does not match template `labels`"}},
			{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m, namespace: missing-ns}\n",
				[]string{`namespaces "missing-ns" not found`}},
		}
		for _, tc := range cases {
			out, err := c.kubectlIn(tc.manifest, "create", "-f", "-")
			if err == nil {
				t.Fatalf("invalid manifest accepted:\n%s", tc.manifest)
			}
			mustContain(t, out, tc.wants...)
		}
	})

	t.Run("delete with finalizers and cascade", func(t *testing.T) {
		c.kubectl("create", "configmap", "held")
		c.kubectl("patch", "cm", "held", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
		mustContain(t, c.kubectl("delete", "cm", "held", "--wait=false"), `configmap "held" deleted`)
		if ts := c.kubectl("get", "cm", "held", "-o", "jsonpath={.metadata.deletionTimestamp}"); ts == "" {
			t.Fatal("object with a finalizer was removed instead of marked")
		}
		c.kubectl("patch", "cm", "held", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
		out, err := c.kubectlErr("get", "cm", "held")
		if err == nil {
			t.Fatalf("object still present after its last finalizer was removed:\n%s", out)
		}

		c.kubectl("create", "configmap", "fg")
		c.kubectl("patch", "cm", "fg", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
		c.kubectl("delete", "cm", "fg", "--cascade=foreground", "--wait=false")
		mustContain(t, c.kubectl("get", "cm", "fg", "-o", "jsonpath={.metadata.finalizers}"), "foregroundDeletion", "example.com/hold")

		c.kubectl("create", "configmap", "orph")
		c.kubectl("patch", "cm", "orph", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
		c.kubectl("delete", "cm", "orph", "--cascade=orphan", "--wait=false")
		mustContain(t, c.kubectl("get", "cm", "orph", "-o", "jsonpath={.metadata.finalizers}"), "orphan")

		mustContain(t, c.kubectl("delete", "cm", "beta", "--cascade=background"), `configmap "beta" deleted`)
		out, err = c.kubectlErr("delete", "namespace", "default")
		if err == nil {
			t.Fatal("deleting the default namespace succeeded")
		}
		mustContain(t, out, "Forbidden")
	})

	t.Run("services get cluster IPs and node ports", func(t *testing.T) {
		c.kubectl("create", "service", "clusterip", "api", "--tcp=80:8080")
		c.kubectl("create", "service", "nodeport", "edge", "--tcp=80:8080")
		ip := c.kubectl("get", "svc", "api", "-o", "jsonpath={.spec.clusterIP}")
		if !strings.HasPrefix(ip, "10.43.") {
			t.Fatalf("cluster IP %q not from the service range", ip)
		}
		port := c.kubectl("get", "svc", "edge", "-o", "jsonpath={.spec.ports[0].nodePort}")
		if len(port) != 5 || port < "30000" || port > "32767" {
			t.Fatalf("node port %q not in 30000-32767", port)
		}
		mustContain(t, c.kubectl("get", "svc"), "kubernetes", "10.43.0.1", "443/TCP", "80:"+port+"/TCP")
		// The API server's own endpoints have a slice too (it is not mirrored: skip-mirror).
		if epIP, err := c.kubectlErr("get", "endpoints", "kubernetes", "-n", "default", "-o", "jsonpath={.subsets[0].addresses[0].ip}"); err == nil {
			sliceIP := c.kubectl("get", "endpointslice", "kubernetes", "-n", "default", "-o", "jsonpath={.endpoints[0].addresses[0]} {.ports[0].name}")
			if sliceIP != strings.TrimSpace(epIP)+" https" {
				t.Fatalf("kubernetes endpointslice = %q, endpoints IP %q", sliceIP, epIP)
			}
		}
		out, err := c.kubectlIn("apiVersion: v1\nkind: Service\nmetadata: {name: taken}\nspec:\n  clusterIP: "+ip+"\n  ports: [{port: 80}]\n", "create", "-f", "-")
		if err == nil {
			t.Fatal("a service took an allocated cluster IP")
		}
		mustContain(t, out, "provided IP is already allocated")
		c.kubectl("delete", "svc", "api")
		mustContain(t, c.stdin("apiVersion: v1\nkind: Service\nmetadata: {name: reuse}\nspec:\n  clusterIP: "+ip+"\n  ports: [{port: 80}]\n", "create", "-f", "-"), "service/reuse created")
	})

	t.Run("health checks by name", func(t *testing.T) {
		// kube-apiserver's check names, each a step skiff's API server finished (e2e "health
		// handlers should contain necessary checks").
		eventually(t, 30*time.Second, func() error {
			for _, endpoint := range []string{"/healthz", "/livez", "/readyz"} {
				out, err := c.kubectlErr("get", "--raw", endpoint+"?verbose=1")
				if err != nil {
					return fmt.Errorf("%s: %v %s", endpoint, err, out)
				}
				for _, want := range []string{"[+]ping ok", "[+]log ok", "[+]etcd ok", "[+]poststarthook/start-service-ip-repair-controllers ok",
					"[+]poststarthook/crd-informer-synced ok", "[+]poststarthook/apiservice-openapi-controller ok", "[+]autoregister-completion ok"} {
					if !strings.Contains(out, want) {
						return fmt.Errorf("%s?verbose lacks %q:\n%s", endpoint, want, out)
					}
				}
			}
			return nil
		})
		mustContain(t, c.kubectl("get", "--raw", "/readyz?verbose"), "[+]informer-sync ok", "readyz check passed")
	})

	t.Run("service CIDR and IP addresses", func(t *testing.T) {
		// The cluster's service range is published as the Ready "kubernetes" ServiceCIDR.
		if got := c.kubectl("get", "servicecidr", "kubernetes", "-o", `jsonpath={.spec.cidrs[0]} {.status.conditions[?(@.type=="Ready")].status}`); got != "10.43.0.0/16 True" {
			t.Fatalf("default ServiceCIDR: %q", got)
		}
		if out, err := c.kubectlIn(`{"apiVersion":"networking.k8s.io/v1","kind":"IPAddress","metadata":{"name":"192.0.2.9"},"spec":{"parentRef":{"resource":"things","name":"a"}}}`, "create", "-f", "-"); err != nil {
			t.Fatalf("create IPAddress: %v\n%s", err, out)
		}
		c.kubectl("annotate", "ip", "192.0.2.9", "checked=yes")
		if got := c.kubectl("get", "ipaddress", "192.0.2.9", "-o", "jsonpath={.metadata.annotations.checked}"); got != "yes" {
			t.Fatalf("IPAddress annotation: %q", got)
		}
		out, err := c.kubectlIn(`{"apiVersion":"networking.k8s.io/v1","kind":"IPAddress","metadata":{"name":"192.0.02.9"},"spec":{"parentRef":{"resource":"things","name":"a"}}}`, "create", "-f", "-")
		if err == nil {
			t.Fatal("a non-canonical IPAddress name was accepted")
		}
		mustContain(t, out, "must be a valid IP address")
		c.kubectl("delete", "ipaddress", "192.0.2.9")
	})

	t.Run("status subresources keep metadata changes", func(t *testing.T) {
		// As Kubernetes: /status of a Service may change its annotations (conformance's service
		// status lifecycle does), never its spec.
		c.kubectl("create", "service", "clusterip", "statusmeta", "--tcp=80:80")
		c.kubectl("patch", "service", "statusmeta", "--subresource=status", "--type=merge", "-p", `{"metadata":{"annotations":{"patchedstatus":"true"}},"spec":{"type":"NodePort"}}`)
		if got := c.kubectl("get", "service", "statusmeta", "-o", "jsonpath={.metadata.annotations.patchedstatus} {.spec.type}"); got != "true ClusterIP" {
			t.Fatalf("after a status patch: %q", got)
		}
		c.kubectl("delete", "service", "statusmeta")
	})

	t.Run("service account tokens", func(t *testing.T) {
		eventually(t, 20*time.Second, func() error {
			_, err := c.kubectlErr("get", "serviceaccount", "default")
			return err
		})
		token := strings.TrimSpace(c.kubectl("create", "token", "default", "--duration=15m"))
		ca := filepath.Join(c.dataDir, "pki", "ca.crt")
		url := "https://127.0.0.1:" + itoa(c.ports[0]) + "/api/v1/namespaces/default/configmaps"
		out, err := execOutput("curl", "-s", "--cacert", ca, "-H", "Authorization: Bearer "+token, url)
		if err != nil {
			t.Fatal(err)
		}
		// The token authenticates as the service account, which RBAC gives no right to list.
		mustContain(t, out, `"code":403`, `User \"system:serviceaccount:default:default\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"`)
		out, _ = execOutput("curl", "-s", "--cacert", ca, "-H", "Authorization: Bearer "+token[:len(token)-3]+"xyz", url)
		mustContain(t, out, `"code":401`)
		out, err = c.kubectlErr("create", "token", "default", "--duration=5m")
		if err == nil {
			t.Fatal("a 5-minute token was issued")
		}
		mustContain(t, out, "may not specify a duration less than 10 minutes")
	})

	t.Run("pods defaults and table", func(t *testing.T) {
		mustContain(t, c.kubectl("run", "sleeper", "--image=localhost/busybox:local", "--restart=Never", "--", "sleep", "3600"), "pod/sleeper created")
		out := c.kubectl("get", "pods", "-o", "wide")
		mustContain(t, out, "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES", "sleeper", "0/1", "Pending")
		got := c.kubectl("get", "pod", "sleeper", "-o", "jsonpath={.spec.restartPolicy} {.spec.dnsPolicy} {.spec.schedulerName} {.spec.serviceAccountName} {.status.qosClass} {.spec.terminationGracePeriodSeconds}")
		if got != "Never ClusterFirst default-scheduler default BestEffort 30" {
			t.Fatalf("pod defaults: %q", got)
		}
		out, err := c.kubectlErr("patch", "pod", "sleeper", "--type=merge", "-p", `{"spec":{"restartPolicy":"Always"}}`)
		if err == nil {
			t.Fatal("changing an immutable pod field succeeded")
		}
		mustContain(t, out, "pod updates may not change fields other than")
		// An unscheduled pod is deleted at once.
		mustContain(t, c.kubectl("delete", "pod", "sleeper", "--wait=false"), `pod "sleeper" deleted`)
	})
}

// TestServiceCIDRs: a ServiceCIDR beyond the cluster's service range gets the service-cidr
// finalizer and Ready (the service-cidr-controller), a Service may take one of its addresses (an
// IPAddress names the Service), and deleting the range waits, Terminating, until that Service is
// gone. The node's proxy refuses the range's untranslated traffic, as the service range's.
func TestServiceCIDRs(t *testing.T) {
	c := newWorkerCluster(t)
	// No traffic is sent to its addresses here: a range without proxy rules would leave by
	// the default route. The harness's upstream spec checks reachability behind its firewall.
	c.stdin(`{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"more"},"spec":{"cidrs":["203.0.113.0/29"]}}`, "create", "-f", "-")
	eventually(t, 30*time.Second, func() error {
		got := c.kubectl("get", "servicecidr", "more", "-o", `jsonpath={.metadata.finalizers} {.status.conditions[?(@.type=="Ready")].status}`)
		if got != `["networking.k8s.io/service-cidr-finalizer"] True` {
			return fmt.Errorf("ServiceCIDR more: %q, want its finalizer and Ready True\n%s", got, grepLines(c.logAll(), "cidr", "forbidden"))
		}
		return nil
	})
	// The node's proxy refuses the new range's untranslated traffic, as it does the service range's.
	eventually(t, 30*time.Second, func() error {
		for _, r := range proxyRules(t, proxy.NodePrefix(c.dataDir)) {
			if strings.Contains(r, "203.0.113.0/29") && strings.Contains(r, "service range without rules") {
				return nil
			}
		}
		return fmt.Errorf("no reject rule for 203.0.113.0/29 in the node's service rules:\n%s\n%s", strings.Join(proxyRules(t, proxy.NodePrefix(c.dataDir)), "\n"), grepLines(c.logAll(), "proxy", "servicecidr"))
	})
	mustContain(t, c.stdin("apiVersion: v1\nkind: Service\nmetadata: {name: extra}\nspec:\n  clusterIP: 203.0.113.3\n  ports: [{port: 80}]\n", "create", "-f", "-"), "service/extra created")
	if got := c.kubectl("get", "ipaddress", "203.0.113.3", "-o", "jsonpath={.spec.parentRef.resource} {.spec.parentRef.namespace}/{.spec.parentRef.name}"); got != "services default/extra" {
		t.Fatalf("IPAddress 203.0.113.3: %q, want it to name the Service", got)
	}
	out, err := c.kubectlIn("apiVersion: v1\nkind: Service\nmetadata: {name: twin}\nspec:\n  clusterIP: 203.0.113.3\n  ports: [{port: 80}]\n", "create", "-f", "-")
	if err == nil {
		t.Fatal("a second service took 203.0.113.3")
	}
	mustContain(t, out, "provided IP is already allocated")
	out, err = c.kubectlIn("apiVersion: v1\nkind: Service\nmetadata: {name: outside}\nspec:\n  clusterIP: 203.0.113.9\n  ports: [{port: 80}]\n", "create", "-f", "-")
	if err == nil {
		t.Fatal("a service took an address of no ServiceCIDR")
	}
	mustContain(t, out, "is not in the valid range")

	// Deleting the range while the Service holds its address leaves it Terminating.
	c.kubectl("delete", "servicecidr", "more", "--wait=false")
	eventually(t, 30*time.Second, func() error {
		got := c.kubectl("get", "servicecidr", "more", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
		if got != "Terminating" {
			return fmt.Errorf("ServiceCIDR more being deleted: Ready reason %q, want Terminating", got)
		}
		return nil
	})
	c.kubectl("delete", "svc", "extra")
	if out, err := c.kubectlErr("get", "ipaddress", "203.0.113.3"); err == nil {
		t.Fatalf("IPAddress of the deleted Service still there:\n%s", out)
	}
	eventually(t, 60*time.Second, func() error {
		if out, err := c.kubectlErr("get", "servicecidr", "more"); err == nil {
			return fmt.Errorf("ServiceCIDR more still there after the Service went:\n%s", out)
		}
		return nil
	})
}

// TestControllersThroughTheAPI checks that the controller manager the controlplane role runs reaches
// the API server through client-go: a Deployment gets a ReplicaSet and its pods.
func TestControllersThroughTheAPI(t *testing.T) {
	c := newCluster(t, "--leader-elect-lease-duration=7s", "--leader-elect-renew-deadline=5s", "--leader-elect-retry-period=1s")
	c.kubectl("create", "deployment", "app", "--image=localhost/busybox:local", "--replicas=3")
	eventually(t, 30*time.Second, func() error {
		out, _ := c.kubectlErr("get", "pods", "-l", "app=app", "-o", "name")
		if strings.Count(out, "pod/app-") != 3 {
			return errString("pods so far: " + out)
		}
		return nil
	})
	mustContain(t, c.kubectl("get", "rs", "-l", "app=app"), "3         3")
	mustContain(t, c.kubectl("get", "lease", "-n", "kube-system"), "kube-controller-manager")
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		if got := c.kubectl("get", "lease", "-n", "kube-system", lease, "-o", "jsonpath={.spec.leaseDurationSeconds}"); got != "7" {
			t.Fatalf("lease %s lasts %ss, want the flag's 7s", lease, got)
		}
	}

	// A claim is bound to the smallest fitting volume of its class.
	c.stdin(`apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-big}
spec: {capacity: {storage: 5Gi}, accessModes: [ReadWriteOnce], storageClassName: local, hostPath: {path: /tmp/pv-big}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-small}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], storageClassName: local, hostPath: {path: /tmp/pv-small}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 500Mi}}}
`, "apply", "-f", "-")
	eventually(t, 30*time.Second, func() error {
		got := c.kubectl("get", "pvc", "data", "-o", "jsonpath={.status.phase} {.spec.volumeName}")
		if got != "Bound pv-small" {
			return errString("claim: " + got)
		}
		return nil
	})
	mustContain(t, c.kubectl("get", "pv", "pv-small"), "Bound", "default/data")
	mustContain(t, c.kubectl("get", "pv", "pv-big"), "Available")
}

// TestWritesSurviveCrash kills skiff with SIGKILL in the middle of a write load and checks that every
// acknowledged write is there after a restart.
func TestWritesSurviveCrash(t *testing.T) {
	c := newCluster(t)
	acked := make(chan string, 1000)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := "crash-" + strings.Repeat("0", 4-len(itoa(i))) + itoa(i)
			if _, err := c.kubectlErr("create", "configmap", name, "--from-literal=i="+itoa(i)); err == nil {
				acked <- name
			}
			if i >= 400 {
				return
			}
		}
	}()
	time.Sleep(3 * time.Second)
	c.kill()
	close(stop)
	<-done
	close(acked)
	var names []string
	for n := range acked {
		names = append(names, n)
	}
	if len(names) == 0 {
		t.Fatal("no write was acknowledged before the crash")
	}
	c.start()
	out := c.kubectl("get", "configmaps", "-o", "name")
	for _, n := range names {
		if !strings.Contains(out, "configmap/"+n+"\n") {
			t.Fatalf("acknowledged write %s lost after crash (had %d acknowledged)", n, len(names))
		}
	}
	t.Logf("%d acknowledged writes all present after kill -9 and restart", len(names))
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestKubeconfigCommand checks that `skiff kubeconfig` prints the admin kubeconfig.
func TestKubeconfigCommand(t *testing.T) {
	c := newCluster(t)
	out, err := execOutput(skiffBinary, "kubeconfig", "--data-dir", c.dataDir)
	if err != nil {
		t.Fatalf("skiff kubeconfig: %v\n%s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(c.dataDir, "admin.kubeconfig"))
	if out != string(want) {
		t.Fatal("skiff kubeconfig printed something other than the admin kubeconfig")
	}
	mustContain(t, out, "client-certificate-data", "certificate-authority-data")
	// Anonymous requests (--anonymous-auth, on by default) are system:anonymous, whom RBAC lets
	// read health and version only.
	ca := filepath.Join(c.dataDir, "pki", "ca.crt")
	url := "https://127.0.0.1:" + itoa(c.ports[0])
	anon, _ := execOutput("curl", "-s", "--cacert", ca, url+"/api/v1/namespaces")
	mustContain(t, anon, `"code":403`, `"reason":"Forbidden"`, `User \"system:anonymous\" cannot list resource \"namespaces\"`)
	health, _ := execOutput("curl", "-s", "--cacert", ca, url+"/healthz")
	if strings.TrimSpace(health) != "ok" {
		t.Fatalf("anonymous /healthz = %q", health)
	}
}
