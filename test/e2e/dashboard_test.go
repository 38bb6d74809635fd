package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// TestDashboardServedWithoutCredentials: the page's static files load without credentials on the
// API server, while API data and anything but GET of /dashboard/ still need them.
func TestDashboardServedWithoutCredentials(t *testing.T) {
	c := newCluster(t)
	base := "https://127.0.0.1:" + strconv.Itoa(c.ports[0])
	// Loopback test traffic to our own node; the page's certificate is the node's own CA's.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	do := func(method, path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := do("GET", "/dashboard/", ""); code != 200 || !strings.Contains(body, "skiff dashboard") {
		t.Errorf("GET /dashboard/ without credentials: %d %.200q", code, body)
	}
	if code, _ := do("GET", "/dashboard/app.js", ""); code != 200 {
		t.Errorf("GET /dashboard/app.js without credentials: %d", code)
	}
	// Without credentials a request is system:anonymous (--anonymous-auth), whom RBAC refuses.
	for _, path := range []string{"/api/v1/pods", "/api/v1/namespaces/kube-system/secrets", "/skiff/v1/etcd/members"} {
		if code, _ := do("GET", path, ""); code != http.StatusForbidden {
			t.Errorf("GET %s without credentials: %d, want 403", path, code)
		}
	}
	if code, _ := do("POST", "/dashboard/", ""); code != http.StatusForbidden {
		t.Errorf("POST /dashboard/ without credentials: %d, want 403 (only GET of the files is exempt)", code)
	}
	if code, _ := do("GET", "/api/v1/pods", "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/pods with a bad token: %d, want 401", code)
	}
}

// startDashboard runs `skiff dashboard` for the cluster and answers its URL.
func startDashboard(t *testing.T, c *cluster) string {
	t.Helper()
	cmd := exec.Command(c.bin, "dashboard", "--data-dir", c.dataDir, "--port", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testLogWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("skiff dashboard printed no URL: %v", err)
	}
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/dashboard/`).FindString(line)
	if url == "" {
		t.Fatalf("skiff dashboard printed %q, no URL", line)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return url
}

// browser starts headless Debian chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (hack/install-chromium.sh)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.WindowSize(1500, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	acceptDialogs(ctx, "")
	return ctx
}

// acceptDialogs answers every confirm() with OK and every prompt() with promptText.
func acceptDialogs(ctx context.Context, promptText string) {
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true).WithPromptText(promptText)) }()
		}
	})
}

// waitJS polls a JavaScript expression in the page until it is true.
func waitJS(t *testing.T, ctx context.Context, timeout time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		err := chromedp.Run(ctx, chromedp.Evaluate(expr, &ok))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			var text string
			_ = chromedp.Run(ctx, chromedp.Evaluate(`document.body.innerText`, &text))
			t.Fatalf("%s: not true after %v (err %v); page:\n%s", what, timeout, err, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	// With SKIFF_SCREENSHOTS=docs the screenshots replace those committed under docs/dashboard
	// (shown in docs/user/dashboard.md); otherwise they go to the test's temporary directory.
	dir := t.TempDir()
	if os.Getenv("SKIFF_SCREENSHOTS") == "docs" {
		dir = filepath.Join("..", "..", "docs", "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rowJS is a JavaScript expression: the text of the first row of table id whose text contains
// name ("" when none).
func rowJS(id, name string) string {
	return fmt.Sprintf(`(Array.from(document.querySelectorAll('#%s .vt-row')).find(r => r.innerText.includes(%q)) || {innerText: ''}).innerText`, id, name)
}

func TestDashboardBrowser(t *testing.T) {
	ctx := browser(t)
	c := newCluster(t)
	k := ctl{c: c, t: t}
	// The labels and taints skiff gives the Nodes of its control-plane and etcd-only nodes.
	c.startSimNodes(t, simnode.Config{Nodes: 1, NamePrefix: "cp-", KubeletVersion: "v1.37.2-skiff",
		Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": ""},
		Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}})
	c.startSimNodes(t, simnode.Config{Nodes: 1, NamePrefix: "etcd-", FirstIndex: 5, KubeletVersion: "v1.37.2-skiff",
		Labels: map[string]string{"node-role.kubernetes.io/etcd": ""},
		Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/etcd", Effect: corev1.TaintEffectNoExecute}}})
	c.startSimNodes(t, simnode.Config{Nodes: 2, NamePrefix: "worker-", FirstIndex: 10, KubeletVersion: "v1.37.2-skiff",
		Labels: map[string]string{"node-role.kubernetes.io/worker": ""}})
	url := startDashboard(t, c)

	// Nodes, through skiff dashboard (admin, no sign-in): roles and the Unschedulable badge.
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#nodes")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 60*time.Second, "control-plane node with roles and Unschedulable",
		`(t => t.includes('control-plane') && t.includes('etcd') && t.includes('Unschedulable') && t.includes('Ready'))(`+rowJS("t-nodes", "cp-")+`)`)
	waitJS(t, ctx, 30*time.Second, "etcd-only node with its role and Unschedulable, its taint on hover",
		`(t => t.includes('etcd') && !t.includes('control-plane') && t.includes('Unschedulable') && t.includes('Ready'))(`+rowJS("t-nodes", "etcd-")+`) && `+
			`Array.from(document.querySelectorAll('#t-nodes .vt-row')).find(r => r.innerText.includes('etcd-')).querySelector('.badge.warn').title === 'node-role.kubernetes.io/etcd:NoExecute'`)
	waitJS(t, ctx, 30*time.Second, "worker nodes schedulable",
		`(t => t.includes('worker') && t.includes('Ready') && !t.includes('Unschedulable'))(`+rowJS("t-nodes", "worker-")+`)`)
	// A cordon from the page goes through the API (confirm() is accepted).
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.__loaded = 1`, nil)); err != nil {
		t.Fatal(err)
	}
	var worker string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('#t-nodes .vt-row span:first-child')).map(s => s.innerText).find(n => n.startsWith('worker-'))`, &worker)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Run(ctx, chromedp.Click(fmt.Sprintf(`button[data-act="cordon"][data-name=%q]`, worker))); err != nil {
		t.Fatal(err)
	}
	k.eventually(30*time.Second, func() error {
		if out := k.jsonpath("{.spec.unschedulable}", "node", worker); out != "true" {
			return fmt.Errorf("node %s unschedulable = %q", worker, out)
		}
		return nil
	})
	waitJS(t, ctx, 30*time.Second, "cordoned worker shows Unschedulable", `(t => t.includes('Unschedulable') && t.includes('Uncordon'))(`+rowJS("t-nodes", worker)+`)`)
	k.run("uncordon", worker)
	screenshot(t, ctx, "nodes")

	// Workloads: a Deployment scaled with kubectl updates without a reload.
	k.run("create", "deployment", "web", "--image=registry.example/web:1", "--replicas=1")
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#workloads")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 60*time.Second, "deployment web listed", rowJS("t-workloads", "web")+` !== ''`)
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.__noReload = 1`, nil)); err != nil {
		t.Fatal(err)
	}
	k.run("scale", "deployment", "web", "--replicas=3")
	waitJS(t, ctx, 60*time.Second, "deployment web desired 3, ready 3 without reload",
		`window.__noReload === 1 && (r => r && r.querySelector('.desired').innerText === '3' && r.querySelector('.ready').innerText === '3')(Array.from(document.querySelectorAll('#t-workloads .vt-row')).find(r => r.innerText.includes('web')))`)
	screenshot(t, ctx, "workloads")

	// Services with their endpoints.
	k.run("expose", "deployment", "web", "--port=80")
	clusterIP := k.jsonpath("{.spec.clusterIP}", "service", "web")
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#services")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 60*time.Second, "service web with its cluster IP and 3 ready endpoints",
		fmt.Sprintf(`(t => t.includes(%q) && t.includes('80/TCP') && t.includes('3 ready'))(`+rowJS("t-services", "web")+`)`, clusterIP))
	screenshot(t, ctx, "services")

	// A Pending pod shows the scheduler's reasons: the FailedScheduling message, and per node the
	// verdicts of a PodSchedulingExplanation (the tainted control-plane node, the full workers).
	k.apply(`apiVersion: v1
kind: Pod
metadata: {name: stuck, namespace: default}
spec:
  containers: [{name: app, image: registry.example/app:1, resources: {requests: {cpu: "6"}}}]
`)
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#pod/default/stuck")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 60*time.Second, "pending pod's scheduling reasons",
		`(e => e !== null && e.innerText.includes('nodes are available') && e.innerText.includes('Insufficient cpu'))(document.getElementById('sched-reasons'))`)
	waitJS(t, ctx, 60*time.Second, "per-node verdicts: the control-plane node's taint, a worker's cpu",
		`(t => t.includes('untolerated taint'))(`+rowJS("t-explain", "cp-")+`) && (t => t.includes('Insufficient cpu') && !t.includes('taint'))(`+rowJS("t-explain", "worker-")+`)`)
	waitJS(t, ctx, 10*time.Second, "the per-node summary counts the workers' cpu",
		`(e => e !== null && /[0-9]+\s+Insufficient cpu/.test(e.innerText))(document.getElementById('explain-reasons'))`)
	screenshot(t, ctx, "pod-pending")

	// Pods list, with the label selector.
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#pods"), chromedp.SendKeys("#selector", "app=web")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 30*time.Second, "pods of app=web only",
		`(rows => rows.length === 3 && rows.every(r => r.innerText.includes('web-')))(Array.from(document.querySelectorAll('#t-pods .vt-row')))`)
	screenshot(t, ctx, "pods")

	// Control plane: etcd members and the leaders.
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#controlplane")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 30*time.Second, "etcd leader and scheduler/controller-manager holders",
		`(m => m !== null && m.innerText.includes('leader'))(document.getElementById('etcd-members')) && (l => l !== null && !l.innerText.includes('(none)'))(document.getElementById('leaders')) && document.getElementById('apiserver-ready').innerText.startsWith('ready:')`)
	screenshot(t, ctx, "controlplane")

	// A token bound to view in one namespace: signs in on the API server itself, sees that
	// namespace only, and its scale is refused with the API's 403 message.
	k.run("create", "namespace", "team-a")
	k.run("create", "deployment", "api", "--image=registry.example/api:1", "-n", "team-a")
	k.run("create", "serviceaccount", "viewer", "-n", "team-a")
	k.run("create", "rolebinding", "viewer-view", "--clusterrole=view", "--serviceaccount=team-a:viewer", "-n", "team-a")
	token := strings.TrimSpace(k.run("create", "token", "viewer", "-n", "team-a", "--duration=1h"))

	vctx, cancel := chromedp.NewContext(ctx) // a new tab: its own sessionStorage
	defer cancel()
	acceptDialogs(vctx, "5")
	apiURL := "https://127.0.0.1:" + strconv.Itoa(c.ports[0]) + "/dashboard/"
	if err := chromedp.Run(vctx, chromedp.Navigate(apiURL), chromedp.WaitVisible("#token", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, vctx, "signin")
	if err := chromedp.Run(vctx, chromedp.SetValue("#token", token, chromedp.ByID), chromedp.Click("#signin-button", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, vctx, 30*time.Second, "cluster-wide nodes forbidden for the viewer",
		`document.body.innerText.includes('forbidden') && document.getElementById('t-nodes').dataset.rows === '0'`)
	if err := chromedp.Run(vctx, chromedp.Navigate(apiURL+"#workloads"), chromedp.SendKeys("#ns", "team-a", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, vctx, 30*time.Second, "viewer sees team-a's deployment only",
		`(rows => rows.length === 1 && rows[0].innerText.includes('api') && rows[0].innerText.includes('team-a'))(Array.from(document.querySelectorAll('#t-workloads .vt-row')))`)
	if err := chromedp.Run(vctx, chromedp.Click(`button[data-act="scale"][data-name="api"]`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, vctx, 30*time.Second, "scale refused with the API's message",
		`(m => !m.hidden && m.innerText.includes('failed') && m.innerText.includes('forbidden'))(document.getElementById('msg'))`)
	screenshot(t, vctx, "viewer-forbidden")

	// A viewer may not read the per-node verdicts (view grants no explanations and no nodes).
	k.apply(`apiVersion: v1
kind: Pod
metadata: {name: stuck-a, namespace: team-a}
spec:
  containers: [{name: app, image: registry.example/app:1, resources: {requests: {cpu: "6"}}}]
`)
	if err := chromedp.Run(vctx, chromedp.Navigate(apiURL+"#pod/team-a/stuck-a")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, vctx, 30*time.Second, "viewer: per-node verdicts may not be read",
		`(e => e !== null && e.innerText.includes('may not read'))(document.getElementById('explain-error'))`)
	if out := k.jsonpath("{.spec.replicas}", "-n", "team-a", "deployment", "api"); out != "1" {
		t.Errorf("the viewer's scale changed replicas to %q", out)
	}
}
