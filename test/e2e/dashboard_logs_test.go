package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardLogsFollowKubelet: a real pod's log (skiff's kubelet on containerd) follows on its
// page, new lines appearing without a reload.
func TestDashboardLogsFollowKubelet(t *testing.T) {
	ctx := browser(t)
	c := newWorkerCluster(t)
	k := ctl{c: c, t: t}
	k.apply(`apiVersion: v1
kind: Pod
metadata: {name: ticker, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "i=0; while true; i=$((i+1)); do echo tick-$i; sleep 0.3; done"]
`)
	k.run("wait", "--for=condition=Ready", "pod/ticker", "--timeout=90s")
	url := startDashboard(t, c)
	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#pod/default/ticker")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 60*time.Second, "first log lines", `(l => l !== null && l.textContent.includes('tick-3\n'))(document.getElementById('logs'))`)
	var seen int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.__noReload = 1; Math.max(...document.getElementById('logs').textContent.match(/tick-[0-9]+/g).map(s => +s.slice(5)))`, &seen)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 60*time.Second, "later log lines, followed",
		fmt.Sprintf(`window.__noReload === 1 && document.getElementById('logs').textContent.includes('tick-%d\n')`, seen+10))
}
