package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver/flowcontrol"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
)

// apfCluster is a test cluster with API Priority and Fairness on Kubernetes' default
// configuration and serverLimit seats.
func apfCluster(t *testing.T, serverLimit int, requestTimeout time.Duration, opts ...func(*Config)) (*testCluster, *flowcontrol.Controller) {
	t.Helper()
	reg := prometheus.NewRegistry()
	fc, err := flowcontrol.New(flowcontrol.Config{ServerLimit: serverLimit, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, func(cfg *Config) {
		cfg.Registry, cfg.Gatherer = reg, reg
		cfg.FlowControl = fc
		cfg.RequestTimeout = requestTimeout
		for _, o := range opts {
			o(cfg)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	levels, schemas := builtin.FlowControlConfiguration()
	for _, pl := range levels {
		if err := c.api.EnsureObject(ctx, schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "prioritylevelconfigurations"}, pl); err != nil {
			t.Fatal(err)
		}
	}
	for _, fs := range schemas {
		if err := c.api.EnsureObject(ctx, schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}, fs); err != nil {
			t.Fatal(err)
		}
	}
	writeStatus := func(ctx context.Context, fs *flowcontrolv1.FlowSchema) error {
		_, err := c.api.UpdateStatus(ctx, flowcontrolv1.GroupName, "flowschemas", fs)
		return err
	}
	if err := fc.Start(ctx, c.api.ListWatch, writeStatus); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for fc.Limit("global-default") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("flow control configuration not loaded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c, fc
}

// caller sends raw HTTP requests as the admin, impersonating a user (none: the admin itself), on
// its own connections so that one caller's streams never wait for another's.
type caller struct {
	t      *testing.T
	client *http.Client
	base   string
	user   string
	groups []string
}

func newCaller(t *testing.T, c *testCluster, user string, groups ...string) *caller {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 1000}
	t.Cleanup(tr.CloseIdleConnections)
	return &caller{t: t, client: &http.Client{Transport: tr, Timeout: time.Minute}, base: c.admin.Host, user: user, groups: groups}
}

type callResult struct {
	code     int
	latency  time.Duration
	header   http.Header
	body     []byte
	transErr error
}

func (cl *caller) get(path string) callResult {
	req, err := http.NewRequest(http.MethodGet, cl.base+path, nil)
	if err != nil {
		cl.t.Fatal(err)
	}
	if cl.user != "" {
		req.Header.Set("Impersonate-User", cl.user)
		for _, g := range cl.groups {
			req.Header.Add("Impersonate-Group", g)
		}
	}
	start := time.Now()
	resp, err := cl.client.Do(req)
	if err != nil {
		return callResult{transErr: err, latency: time.Since(start)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return callResult{code: resp.StatusCode, latency: time.Since(start), header: resp.Header, body: body, transErr: err}
}

// latencies summarises durations as median and max.
func latencies(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("n=%d median=%v p90=%v max=%v", len(s), s[len(s)/2].Round(time.Millisecond), s[len(s)*9/10].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

// Requests land on the default levels by who sends them, and the response names schema and level.
func TestFlowControlClassifiesDefaultUsers(t *testing.T) {
	c, _ := apfCluster(t, 600, 0)
	ctx := context.Background()
	pls, err := c.client.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	levelOf := map[string]string{}
	for _, pl := range pls.Items {
		levelOf[string(pl.UID)] = pl.Name
	}
	fss, err := c.client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schemaOf := map[string]string{}
	for _, fs := range fss.Items {
		schemaOf[string(fs.UID)] = fs.Name
	}
	for _, tc := range []struct {
		user               string
		groups             []string
		wantSchema, wantPL string
	}{
		{"", nil, "exempt", "exempt"},
		{"system:node:n1", []string{"system:nodes"}, "system-nodes", "system"},
		{"system:kube-controller-manager", nil, "kube-controller-manager", "workload-high"},
		{"system:kube-scheduler", nil, "kube-scheduler", "workload-high"},
		{"system:serviceaccount:apps:builder", []string{"system:serviceaccounts"}, "service-accounts", "workload-low"},
		{"bob", nil, "global-default", "global-default"},
	} {
		r := newCaller(t, c, tc.user, tc.groups...).get("/api/v1/namespaces/default/configmaps")
		if r.code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.user, r.code, r.body)
		}
		gotFS, gotPL := schemaOf[r.header.Get(headerFlowSchemaUID)], levelOf[r.header.Get(headerPriorityLevelUID)]
		if gotFS != tc.wantSchema || gotPL != tc.wantPL {
			t.Errorf("%q: schema %q level %q, want %q %q", tc.user, gotFS, gotPL, tc.wantSchema, tc.wantPL)
		}
	}

	// A FlowSchema changed through the API takes effect without a restart: bob gets his own
	// schema on the leader-election level.
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "bob-first"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "leader-election"},
			MatchingPrecedence:         100,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "bob"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
			}},
		},
	}
	created, err := c.client.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bob := newCaller(t, c, "bob")
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := bob.get("/api/v1/namespaces/default/configmaps")
		if r.header.Get(headerFlowSchemaUID) == string(created.UID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob still classified by schema %q after the new FlowSchema", schemaOf[r.header.Get(headerFlowSchemaUID)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFlowSchemaDanglingCondition: a FlowSchema's Dangling condition says whether the priority
// level it names exists, and follows the level's creation and deletion (e2e.test's APF
// classification spec waits for it before it sends a request).
func TestFlowSchemaDanglingCondition(t *testing.T) {
	c, _ := apfCluster(t, 600, 0)
	ctx := context.Background()
	fsClient, plClient := c.client.FlowcontrolV1().FlowSchemas(), c.client.FlowcontrolV1().PriorityLevelConfigurations()
	waitDangling := func(name string, want flowcontrolv1.ConditionStatus, reason string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			fs, err := fsClient.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cond := range fs.Status.Conditions {
				if cond.Type == flowcontrolv1.FlowSchemaConditionDangling && cond.Status == want && cond.Reason == reason {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: conditions %+v, want Dangling %s (%s)", name, fs.Status.Conditions, want, reason)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitDangling("catch-all", flowcontrolv1.ConditionFalse, "Found")
	waitDangling("system-nodes", flowcontrolv1.ConditionFalse, "Found")

	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "later"},
			MatchingPrecedence:         500,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "noxu"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	if _, err := fsClient.Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDangling("orphan", flowcontrolv1.ConditionTrue, "NotFound")
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "later"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}
	if _, err := plClient.Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDangling("orphan", flowcontrolv1.ConditionFalse, "Found")
	if err := plClient.Delete(ctx, "later", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDangling("orphan", flowcontrolv1.ConditionTrue, "NotFound")
}

// The must-show of issue 13: one user floods LISTs at high concurrency and gets 429s, while
// another user's requests, the node's and an admin's still succeed.
func TestFlowControlFloodOfLists(t *testing.T) {
	// 120 seats: global-default (20 of 245 shares) gets 10; a LIST of 500 ConfigMaps takes 5, so
	// two run at once. The default 60 s request timeout lets a request wait 15 s in its queue (a
	// LIST takes seconds under -race on a loaded machine); the flood's queues fill at once, so
	// most of its 429s come without waiting.
	c, fc := apfCluster(t, 120, 0)
	t.Logf("global-default limit %d seats, system %d, workload-high %d", fc.Limit("global-default"), fc.Limit("system"), fc.Limit("workload-high"))
	ctx := context.Background()
	ns := c.namespace(t, "apf-flood")
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range 500 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, fmt.Sprintf("cm-%03d", i), nil), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	listPath := "/api/v1/namespaces/" + ns + "/configmaps"

	const flooders = 400
	flood := newCaller(t, c, "mallory")
	var ok, rejected, other atomic.Int64
	var mu sync.Mutex
	var okLatency, rejectLatency []time.Duration
	var sample429 callResult
	stop := make(chan struct{})
	var floodWG sync.WaitGroup
	for range flooders {
		floodWG.Add(1)
		go func() {
			defer floodWG.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := flood.get(listPath)
				mu.Lock()
				switch r.code {
				case http.StatusOK:
					ok.Add(1)
					okLatency = append(okLatency, r.latency)
				case http.StatusTooManyRequests:
					if rejected.Add(1) == 1 {
						sample429 = r
					}
					rejectLatency = append(rejectLatency, r.latency)
				default:
					other.Add(1)
				}
				mu.Unlock()
			}
		}()
	}
	stopFlood := sync.OnceFunc(func() { close(stop); floodWG.Wait() })
	t.Cleanup(stopFlood)

	deadline := time.Now().Add(60 * time.Second)
	for rejected.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no 429 for the flood within 60 s (%d served)", ok.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// While the flood goes on: another user's LISTs of the same ConfigMaps, the node's reads, the
	// controller manager's and an admin's.
	others := []struct {
		name   string
		c      *caller
		path   string
		result []time.Duration
		failed []int
	}{
		{name: "bob (global-default, other flow)", c: newCaller(t, c, "bob"), path: listPath},
		{name: "node (system:nodes)", c: newCaller(t, c, "system:node:n1", "system:nodes"), path: "/api/v1/namespaces/" + ns + "/configmaps/cm-001"},
		{name: "kube-controller-manager", c: newCaller(t, c, "system:kube-controller-manager"), path: listPath},
		{name: "admin (system:masters)", c: newCaller(t, c, ""), path: listPath},
	}
	var othersWG sync.WaitGroup
	for i := range others {
		othersWG.Add(1)
		go func() {
			defer othersWG.Done()
			o := &others[i]
			for range 10 {
				r := o.c.get(o.path)
				if r.code != http.StatusOK {
					o.failed = append(o.failed, r.code)
					continue
				}
				o.result = append(o.result, r.latency)
			}
		}()
	}
	othersWG.Wait()
	stopFlood()

	mu.Lock()
	t.Logf("flood of %d concurrent LISTs of 500 ConfigMaps by one user: %d served (%s), %d rejected 429 (%s), %d other",
		flooders, ok.Load(), latencies(okLatency), rejected.Load(), latencies(rejectLatency), other.Load())
	mu.Unlock()
	for _, o := range others {
		t.Logf("%s during the flood: %s, failures %v", o.name, latencies(o.result), o.failed)
		if len(o.failed) > 0 {
			t.Errorf("%s: %d of 10 requests failed with %v during the flood", o.name, len(o.failed), o.failed)
		}
	}

	// The 429 is a Kubernetes Status with Retry-After and names the flood's schema and level.
	if got := sample429.header.Get("Retry-After"); got == "" {
		t.Errorf("429 without Retry-After")
	}
	var st metav1.Status
	if err := json.Unmarshal(sample429.body, &st); err != nil || st.Reason != metav1.StatusReasonTooManyRequests || st.Code != http.StatusTooManyRequests {
		t.Errorf("429 body %s (%v)", sample429.body, err)
	}
	if sample429.header.Get(headerPriorityLevelUID) == "" {
		t.Errorf("429 without %s", headerPriorityLevelUID)
	}
	gathered, err := c.api.cfg.Gatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range gathered {
		if mf.GetName() == "apiserver_flowcontrol_rejected_requests_total" {
			for _, m := range mf.GetMetric() {
				t.Logf("rejected %v: %v", m.GetLabel(), m.GetCounter().GetValue())
				found = true
			}
		}
	}
	if !found {
		t.Error("no apiserver_flowcontrol_rejected_requests_total series")
	}
}

// A watch holds its seats only while it starts: on a level of one seat, five open watches leave
// room for a LIST.
func TestFlowControlWatchesReleaseSeats(t *testing.T) {
	// 12 seats: global-default gets ceil(12*20/245) = 1. A 4 s request timeout: 1 s in a queue.
	c, fc := apfCluster(t, 12, 4*time.Second)
	if got := fc.Limit("global-default"); got != 1 {
		t.Fatalf("global-default limit %d, want 1", got)
	}
	ns := c.namespace(t, "apf-watch")
	if _, err := c.client.CoreV1().ConfigMaps(ns).Create(context.Background(), configMap(ns, "a", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bobCfg := rest.CopyConfig(c.admin)
	bobCfg.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
	bobCfg.Timeout = 0
	bob := kubernetes.NewForConfigOrDie(bobCfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 5 {
		w, err := bob.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		defer w.Stop()
		if ev := nextEvent(t, w); ev.Type != watch.Added {
			t.Fatalf("watch %d: first event %v, want the ConfigMap ADDED", i, ev.Type)
		}
	}
	r := newCaller(t, c, "bob").get("/api/v1/namespaces/" + ns + "/configmaps")
	if r.code != http.StatusOK {
		t.Fatalf("LIST with five watches open on a one-seat level: %d %s", r.code, r.body)
	}
}

// blockingAdmission holds the creation of ConfigMaps named "slow" until release is closed,
// ignoring the request's context, as a handler that does not stop at once would.
type blockingAdmission struct{ release chan struct{} }

func (*blockingAdmission) Name() string { return "Blocking" }

func (b *blockingAdmission) Admit(_ context.Context, a *AdmissionAttributes, _ Lookup) error {
	if a.Resource.GroupResource().Resource == "configmaps" && a.Name == "slow" {
		<-b.release
	}
	return nil
}

func (*blockingAdmission) Validate(context.Context, *AdmissionAttributes, Lookup) error { return nil }

// A request answered 504 keeps its seats until its handler has really ended.
func TestFlowControlTimedOutRequestKeepsSeats(t *testing.T) {
	block := &blockingAdmission{release: make(chan struct{})}
	var reg *prometheus.Registry
	c, _ := apfCluster(t, 600, 2*time.Second, func(cfg *Config) {
		cfg.Admission = append(cfg.Admission, block)
		reg = cfg.Registry.(*prometheus.Registry)
	})
	released := sync.OnceFunc(func() { close(block.release) })
	t.Cleanup(released)
	executingSeats := func() float64 {
		return gaugeSum(t, reg, "apiserver_flowcontrol_current_executing_seats", "priority_level", "global-default")
	}
	bobCfg := rest.CopyConfig(c.admin)
	bobCfg.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
	bob := kubernetes.NewForConfigOrDie(bobCfg)
	_, err := bob.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "slow", nil), metav1.CreateOptions{})
	wantStatus(t, err, http.StatusGatewayTimeout, "")
	if got := executingSeats(); got < 1 {
		t.Fatalf("after the 504, with the handler still blocked: %v executing seats on global-default, want the request's 1", got)
	}
	released()
	deadline := time.Now().Add(30 * time.Second)
	for executingSeats() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("seats not given back after the handler ended: %v", executingSeats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
