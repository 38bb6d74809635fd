package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardPageDecisions table-tests the page's pure functions in the browser: roles, the
// Unschedulable badge, quantities, a pod's requests and its status.
func TestDashboardPageDecisions(t *testing.T) {
	srv := newFakeAPI(t, syntheticCluster(t, 1, 0))
	ctx := browser(t)
	if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/dashboard/#nodes")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 30*time.Second, "page loaded", `typeof nodeUnschedulable === 'function'`)
	tests := []struct{ expr, want string }{
		{`nodeUnschedulable({spec: {}})`, "false"},
		{`nodeUnschedulable({spec: {unschedulable: true}})`, "true"},
		{`nodeUnschedulable({spec: {taints: [{key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule'}]}})`, "true"},
		{`nodeUnschedulable({spec: {taints: [{key: 'dedicated', value: 'etcd', effect: 'NoExecute'}]}})`, "true"},
		{`nodeUnschedulable({spec: {taints: [{key: 'dedicated', effect: 'PreferNoSchedule'}]}})`, "false"},
		{`nodeUnschedulable({spec: {taints: [{key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule'}, {key: 'node.kubernetes.io/unreachable', effect: 'NoExecute'}]}})`, "false"},
		{`nodeRoles({metadata: {labels: {'node-role.kubernetes.io/worker': '', 'node-role.kubernetes.io/etcd': 'true', app: 'x'}}}).join(',')`, "etcd,worker"},
		// Why: cordoned, and the taints skiff gives its control-plane and etcd nodes' Nodes.
		{`nodeUnschedulableWhy({spec: {}})`, ""},
		{`nodeUnschedulableWhy({spec: {taints: [{key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule'}]}})`, "node-role.kubernetes.io/control-plane:NoSchedule"},
		{`nodeUnschedulableWhy({spec: {unschedulable: true, taints: [{key: 'node.kubernetes.io/not-ready', effect: 'NoExecute'}, {key: 'node-role.kubernetes.io/etcd', effect: 'NoExecute'}, {key: 'dedicated', value: 'db', effect: 'NoSchedule'}]}})`,
			"cordoned; node-role.kubernetes.io/etcd:NoExecute; dedicated=db:NoSchedule"},
		{`(d => (d.innerHTML = badge('Unschedulable', 'warn', 'a:"NoSchedule"'), d.firstChild.title + '|' + d.innerText))(document.createElement('div'))`, `a:"NoSchedule"|Unschedulable`},
		{`nodeRoles({metadata: {}}).length`, "0"},
		{`qty('100m')`, "0.1"},
		{`qty('2')`, "2"},
		{`qty('1Gi')`, "1.073741824e+09"},
		{`qty('1e3')`, "1000"},
		{`qty('bogus')`, "0"},
		{`fmtCPU(0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1)`, "1"},
		{`fmtCPU(0.25)`, "250m"},
		{`fmtMem(1536 * 1024 * 1024)`, "1.5Gi"},
		{`JSON.stringify(podRequests({spec: {containers: [{resources: {requests: {cpu: '100m', memory: '64Mi'}}}, {}],
			initContainers: [{resources: {requests: {cpu: '1', memory: '1Mi'}}}]}}))`, `{"cpu":1,"mem":67108864}`},
		{`podStatus({metadata: {}, status: {phase: 'Pending', conditions: [{type: 'PodScheduled', status: 'False', reason: 'Unschedulable'}]}})`, "Pending (Unschedulable)"},
		{`podStatus({metadata: {}, status: {phase: 'Running', containerStatuses: [{state: {waiting: {reason: 'CrashLoopBackOff'}}}]}})`, "CrashLoopBackOff"},
		{`podStatus({metadata: {deletionTimestamp: 'x'}, status: {phase: 'Running'}})`, "Terminating"},
	}
	// The per-node verdicts of a PodSchedulingExplanation: rows keyed by node, a rejected node's
	// reasons and plugins, a feasible node's score and rank.
	tests = append(tests, []struct{ expr, want string }{
		{`explainRows(null).length`, "0"},
		{`explainRows({nodes: [{name: 'a', feasible: false}]})[0].metadata.name`, "a"},
		{`(d => (d.innerHTML = explainCols()[2].c({feasible: false, reasons: ['Insufficient cpu', 'node(s) had untolerated taint {a: b}'], verdicts: [{plugin: 'NodeResourcesFit'}, {plugin: 'TaintToleration'}]}), d.innerText))(document.createElement('div'))`,
			"Insufficient cpu; node(s) had untolerated taint {a: b} NodeResourcesFit, TaintToleration"},
		{`(d => (d.innerHTML = explainCols()[2].c({feasible: true, totalScore: 170, rank: 2}), d.innerText))(document.createElement('div'))`, "score 170, rank 2"},
	}...)
	// A token the API stops taking returns the page to the sign-in form.
	tests = append(tests, struct{ expr, want string }{`(tokenRejected('Unauthorized'), !document.getElementById('signin').hidden && document.getElementById('view').hidden && document.getElementById('msg').innerText.includes('sign in again'))`, "true"})
	for _, tt := range tests {
		var got any
		if err := chromedp.Run(ctx, chromedp.Evaluate(tt.expr, &got)); err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		if s := fmt.Sprint(got); s != tt.want {
			t.Errorf("%s = %s, want %s", tt.expr, s, tt.want)
		}
	}
}
