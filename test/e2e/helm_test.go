package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helmVersion is the Helm 3 release the chart test runs; it is built from the Go module proxy into a
// tools directory outside skiff's module, so skiff does not depend on Helm.
const helmVersion = "v3.22.0"

// helmBinary builds (once per machine, in the temp dir) or finds helm, or skips the test.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SKIFF_E2E_HELM"); p != "" {
		return p
	}
	dir := filepath.Join(os.TempDir(), "skiff-e2e-tools", "helm-"+helmVersion)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
	// Outside skiff's module: go install of a versioned package ignores the current module anyway,
	// and the temp dir makes that obvious.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("helm %s could not be built from the module proxy (%v); skipping the chart test:\n%s", helmVersion, err, out)
	}
	return bin
}

const chartYAML = `apiVersion: v2
name: crontab-operator
version: 0.1.0
`

const chartTemplate = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: {{ .Release.Name }}-tab
spec:
  cronSpec: "*/5 * * * *"
  image: busybox
  replicas: {{ .Values.replicas }}
`

// TestHelmChartWithCRDs installs, upgrades and uninstalls a Helm 3 chart whose crds/ folder
// declares the kind its templates create: what failed with "no matches for kind
// CustomResourceDefinition" before issue 11.
func TestHelmChartWithCRDs(t *testing.T) {
	helm := helmBinary(t)
	c := newCluster(t, "--controllers=serviceaccount")

	chart := t.TempDir()
	for path, content := range map[string]string{
		"Chart.yaml":             chartYAML,
		"values.yaml":            "replicas: 1\n",
		"crds/crontab.yaml":      crontabCRD,
		"templates/crontab.yaml": chartTemplate,
	} {
		full := filepath.Join(chart, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "HOME="+c.dataDir,
			"HELM_CACHE_HOME="+filepath.Join(c.dataDir, "helm-cache"), "HELM_CONFIG_HOME="+filepath.Join(c.dataDir, "helm-config"),
			"HELM_DATA_HOME="+filepath.Join(c.dataDir, "helm-data"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	mustContain(t, run("install", "demo", chart, "--namespace", "default", "--wait", "--timeout", "60s"), "STATUS: deployed")
	mustContain(t, c.kubectl("get", "crd", "crontabs.stable.example.com"), "crontabs.stable.example.com")
	mustContain(t, c.kubectl("get", "crontab", "demo-tab", "-o", "jsonpath={.spec.replicas}"), "1")

	mustContain(t, run("upgrade", "demo", chart, "--namespace", "default", "--set", "replicas=3"), "STATUS: deployed")
	mustContain(t, c.kubectl("get", "crontab", "demo-tab", "-o", "jsonpath={.spec.replicas}"), "3")
	mustContain(t, run("list", "--namespace", "default"), "demo")

	mustContain(t, run("uninstall", "demo", "--namespace", "default"), "uninstalled")
	eventually(t, 10*time.Second, func() error {
		out, err := c.kubectlErr("get", "crontabs", "-A")
		if err != nil || !strings.Contains(out, "No resources found") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	// Helm leaves the definitions of crds/ in place, by design.
	mustContain(t, c.kubectl("get", "crds"), "crontabs.stable.example.com")
}
