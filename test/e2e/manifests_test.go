package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// manifestsFollow is the bound of issue 30: the cluster follows the directory within 10 s (it is
// read every 2 s).
const manifestsFollow = 10 * time.Second

// TestManifestsDirectory is issue 30's auto-deployed manifests directory with kubectl: files are
// added, changed, broken and removed in <data-dir>/manifests (the default) and the cluster's objects
// follow: applied by server-side apply under the field manager skiff-deploy, pruned by their file
// label, a broken file reported in kube-system/skiff-manifests and as an Event while its objects
// stay, a custom resource whose definition comes in another file applied once the definition is
// served, and a file removed while the server was down pruned after its restart.
func TestManifestsDirectory(t *testing.T) {
	c := newCluster(t, "--controllers=serviceaccount,namespace,garbagecollector")
	dir := filepath.Join(c.dataDir, "manifests")
	write := func(name, data string) time.Time {
		t.Helper()
		// Write then rename, as editors and config managers do, so that no pass reads half a file.
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	remove := func(name string) time.Time {
		t.Helper()
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	// follow waits until kubectl's output for args has (or, with gone, lacks) want and logs how
	// long the cluster took since the file changed.
	follow := func(what string, since time.Time, want string, gone bool, args ...string) {
		t.Helper()
		eventually(t, manifestsFollow, func() error {
			out, err := c.kubectlErr(args...)
			switch {
			case !gone && err == nil && strings.Contains(out, want):
				return nil
			case gone && err == nil && !strings.Contains(out, want):
				return nil
			case gone && err != nil && strings.Contains(out, "NotFound"):
				return nil
			}
			return fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
		})
		t.Logf("%s: followed in %s", what, time.Since(since).Round(100*time.Millisecond))
	}

	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the default manifests directory was not created: %v", err)
	}
	app := `apiVersion: v1
kind: Namespace
metadata: {name: addons}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: addons}
data: {level: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra}
data: {x: "y"}
`
	// Add: a multi-document file (a Namespace and what lives in it, a ConfigMap without a
	// namespace landing in default), a custom resource in a file named before its definition's,
	// and a cluster-scoped object in JSON.
	since := write("app.yaml", app)
	write("a-crontab.yaml", cronTab("nightly", "2"))
	write("crd.yaml", crontabCRD)
	write("priority.json", `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"addons-high"},"value":1000}`)
	follow("add", since, "1", false, "get", "configmap", "settings", "-n", "addons", "-o", "jsonpath={.data.level}")
	follow("add (default namespace)", since, "y", false, "get", "configmap", "extra", "-n", "default", "-o", "jsonpath={.data.x}")
	follow("add (JSON, cluster-scoped)", since, "1000", false, "get", "priorityclass", "addons-high", "-o", "jsonpath={.value}")
	follow("add (custom resource after its definition)", since, "2", false, "get", "crontab", "nightly", "-o", "jsonpath={.spec.replicas}")
	mustContain(t, c.kubectl("get", "configmap", "settings", "-n", "addons", "-o", "jsonpath={.metadata.labels}{.metadata.annotations}{.metadata.managedFields[*].manager}"),
		`"manifests.skiff.sh/file":"app.yaml"`, `"manifests.skiff.sh/hash"`, "skiff-deploy")
	mustContain(t, c.kubectl("get", "lease", "-n", "kube-system", "skiff-manifests", "-o", "jsonpath={.spec.holderIdentity}"), "_")

	// Change: an edited value is applied again; a value someone changed by hand is taken back on
	// the file's next change, and an object someone deleted comes back.
	since = write("app.yaml", strings.Replace(app, `level: "1"`, `level: "2"`, 1))
	follow("change", since, "2", false, "get", "configmap", "settings", "-n", "addons", "-o", "jsonpath={.data.level}")
	since = time.Now()
	c.kubectl("delete", "configmap", "extra", "-n", "default")
	follow("deleted object recreated", since, "y", false, "get", "configmap", "extra", "-n", "default", "-o", "jsonpath={.data.x}")

	// An object dropped from its file is pruned; the rest of the file stays.
	without := strings.Replace(app, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {x: \"y\"}\n", "", 1)
	since = write("app.yaml", strings.Replace(without, `level: "1"`, `level: "2"`, 1))
	follow("object dropped from its file", since, "extra", true, "get", "configmaps", "-n", "default", "-o", "name")
	mustContain(t, c.kubectl("get", "configmap", "settings", "-n", "addons", "-o", "jsonpath={.data.level}"), "2")

	// A broken file: reported (ConfigMap entry and Event, with the document at fault), its objects
	// kept, the server serving, the other files still followed. A new broken file too.
	since = write("app.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings\n")
	write("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n")
	follow("broken file reported", since, "Refused", false, "get", "configmap", "skiff-manifests", "-n", "kube-system", "-o", "jsonpath={.data.app\\.yaml}")
	follow("new broken file reported", since, "metadata.name is required", false, "get", "configmap", "skiff-manifests", "-n", "kube-system", "-o", "jsonpath={.data.broken\\.yaml}")
	follow("broken file's event", since, "app.yaml", false, "get", "events", "-n", "kube-system", "--field-selector", "reason=Refused,involvedObject.name=skiff-manifests", "-o", "jsonpath={.items[*].message}")
	mustContain(t, c.kubectl("get", "configmap", "settings", "-n", "addons", "-o", "jsonpath={.data.level}"), "2")
	since = write("a-crontab.yaml", cronTab("nightly", "5"))
	follow("a good file beside broken ones", since, "5", false, "get", "crontab", "nightly", "-o", "jsonpath={.spec.replicas}")
	mustContain(t, c.kubectl("get", "--raw", "/readyz"), "ok")
	mustContain(t, c.logAll(), "manifests: app.yaml: document 1")

	// Fixed, then removed: its objects are pruned, its entry leaves the status.
	since = write("app.yaml", app)
	follow("fixed file", since, "1", false, "get", "configmap", "settings", "-n", "addons", "-o", "jsonpath={.data.level}")
	since = remove("app.yaml")
	remove("broken.yaml")
	follow("removed file (namespaced)", since, "settings", true, "get", "configmaps", "-A", "-o", "name")
	follow("removed file (namespace)", since, "addons", true, "get", "namespace", "addons", "-o", "name")
	follow("removed file's status entry", since, "app.yaml", true, "get", "configmap", "skiff-manifests", "-n", "kube-system", "-o", "jsonpath={.data}")

	// A file removed while the server is down: its objects are found by the sweep at the start of
	// the next term and pruned.
	c.stop()
	remove("a-crontab.yaml")
	c.start()
	since = time.Now()
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("get", "crontabs", "-A", "-o", "name")
		if err != nil || strings.Contains(out, "nightly") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	t.Logf("file removed while down: pruned %s after ready", time.Since(since).Round(100*time.Millisecond))
	mustContain(t, c.kubectl("get", "priorityclass", "addons-high", "-o", "name"), "addons-high")
}
