package robustness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestSchedule(t *testing.T) {
	for _, tc := range []ScheduleConfig{
		{Kind: FaultPause, Nodes: 3, Duration: 5 * time.Minute, Warmup: 3 * time.Second, Cooldown: 3 * time.Second, Gap: 4 * time.Second, PauseMin: 5 * time.Second, PauseMax: 30 * time.Second, Seed: 1},
		{Kind: FaultKill, Nodes: 1, Duration: 20 * time.Second, Warmup: 3 * time.Second, Cooldown: 3 * time.Second, Gap: 4 * time.Second, Seed: 2},
		{Kind: FaultCompact, Nodes: 1, Duration: 20 * time.Second, Warmup: 3 * time.Second, Cooldown: 3 * time.Second, Gap: 4 * time.Second, Seed: 3},
	} {
		t.Run(string(tc.Kind), func(t *testing.T) {
			faults := Schedule(tc)
			if len(faults) == 0 {
				t.Fatal("no fault planned")
			}
			if again := Schedule(tc); fmt.Sprint(again) != fmt.Sprint(faults) {
				t.Fatalf("the same seed planned %v, then %v", faults, again)
			}
			end := tc.Warmup - tc.Gap
			for _, f := range faults {
				if f.At < end+tc.Gap {
					t.Errorf("%v starts %s after the previous fault ended, want at least %s", f, f.At-end, tc.Gap)
				}
				if f.At+f.Length > tc.Duration-tc.Cooldown {
					t.Errorf("%v runs into the cooldown", f)
				}
				if f.Node < 0 || f.Node >= tc.Nodes {
					t.Errorf("%v targets no node", f)
				}
				if tc.Kind == FaultPause && (f.Length < tc.PauseMin || f.Length > tc.PauseMax) {
					t.Errorf("pause of %s outside [%s, %s]", f.Length, tc.PauseMin, tc.PauseMax)
				}
				end = f.At + f.Length
			}
		})
	}
}

func TestPlan(t *testing.T) {
	k := known{"seen": 42}
	for _, tc := range []struct {
		draw   float64
		key    string
		seenRV int64
		want   choice
	}{
		{0.1, "seen", 50, choice{Kind: OpGet, Key: "seen"}},
		{0.25, "seen", 50, choice{Kind: OpGetCached, Key: "seen"}},
		{0.4, "seen", 50, choice{Kind: OpUpdate, Key: "seen", Precondition: 42}},
		{0.4, "new", 50, choice{Kind: OpCreate, Key: "new"}},
		{0.6, "seen", 50, choice{Kind: OpApply, Key: "seen"}},
		{0.65, "seen", 50, choice{Kind: OpDelete, Key: "seen", Precondition: 42}},
		{0.7, "seen", 50, choice{Kind: OpCreate, Key: "seen"}},
		{0.75, "seen", 50, choice{List: true}},
		{0.82, "seen", 50, choice{List: true, RV: "0"}},
		{0.87, "seen", 50, choice{List: true, RV: "50", Match: "Exact"}},
		{0.92, "seen", 50, choice{List: true, RV: "50", Match: "NotOlderThan"}},
		{0.87, "seen", 0, choice{List: true, Limit: 2}},
		{0.99, "seen", 50, choice{List: true, Limit: 2}},
	} {
		if got := plan(tc.draw, tc.key, k, tc.seenRV); got != tc.want {
			t.Errorf("plan(%v, %s, seen %d) = %+v, want %+v", tc.draw, tc.key, tc.seenRV, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		err    error
		want   Outcome
		reason string
	}{
		{apierrors.NewConflict(gr, "k", errors.New("stale")), OutcomeFailed, "Conflict"},
		{apierrors.NewAlreadyExists(gr, "k"), OutcomeFailed, "AlreadyExists"},
		{apierrors.NewTooManyRequests("busy", 1), OutcomeFailed, "TooManyRequests"},
		{apierrors.NewInternalError(errors.New("etcdserver: request timed out")), OutcomeUnknown, "InternalError"},
		{apierrors.NewServiceUnavailable("no quorum"), OutcomeUnknown, "ServiceUnavailable"},
		{fmt.Errorf("post: %w", syscall.ECONNREFUSED), OutcomeFailed, "connection refused"},
		{context.DeadlineExceeded, OutcomeUnknown, "context deadline exceeded"},
		{io.ErrUnexpectedEOF, OutcomeUnknown, "unexpected EOF"},
	} {
		got, reason := classify(tc.err)
		if got != tc.want || reason != tc.reason {
			t.Errorf("classify(%v) = %s %q, want %s %q", tc.err, got, reason, tc.want, tc.reason)
		}
	}
}

// TestClientRecordsOutcomes runs the recorder against a loopback server answering as an API
// server would: a created object's resourceVersion, a Conflict, a 504 (unknown: the write may
// have happened), and checks no call is retried.
func TestClientRecordsOutcomes(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k","resourceVersion":"17"},"data":{"v":"c0-1"}}`)
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Conflict","code":409}`)
		case r.Method == http.MethodPatch:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusGatewayTimeout)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Timeout","code":504}`)
		case strings.Contains(r.URL.RawQuery, "resourceVersion=0"):
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k","resourceVersion":"17"},"data":{"v":"c0-1"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	log := NewLog("unit", clk)
	c := NewClient(0, cs.CoreV1().RESTClient(), "ns", log)
	ctx := context.Background()
	got := []Op{
		c.Create(ctx, "k", "c0-1"),
		c.Update(ctx, "k", "c0-2", 17),
		c.Apply(ctx, "k", "c0-3"),
		c.Get(ctx, "k", true),
		c.Get(ctx, "k", false),
	}
	want := []string{
		"c0 create k v=c0-1 -> ok rv=17",
		"c0 update k v=c0-2 if-rv=17 -> failed (Conflict)",
		"c0 apply k v=c0-3 -> unknown (Timeout)",
		"c0 get-rv0 k -> ok c0-1@17",
		"c0 get k -> ok not found",
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("call %d recorded %q, want %q", i, got[i], want[i])
		}
	}
	if calls != len(want) {
		t.Errorf("the server saw %d calls for %d made: the recorder retried", calls, len(want))
	}
	if h := log.History(0, nil, nil); len(h.Ops) != len(want) {
		t.Errorf("history holds %d calls, want %d", len(h.Ops), len(want))
	}
}

func TestPartitionScript(t *testing.T) {
	nodes := []CgroupRef{{Path: "unified/rb/rb-1", Level: 2}, {Path: "unified/rb/rb-2", Level: 2}, {Path: "unified/rb/rb-3", Level: 2}}
	marks := []string{
		`socket cgroupv2 level 2 "unified/rb/rb-1" meta mark set 0x52420001`,
		`socket cgroupv2 level 2 "unified/rb/rb-2" meta mark set 0x52420002`,
		`socket cgroupv2 level 2 "unified/rb/rb-3" meta mark set 0x52420003`,
	}
	for _, tc := range []struct {
		name   string
		plan   PartitionPlan
		drops  []string
		absent []string
	}{
		{"both ways", PartitionPlan{Table: "t-1", Nodes: nodes, Target: 1}, []string{
			`meta mark 0x52420002 socket cgroupv2 level 2 "unified/rb/rb-1" drop`,
			`meta mark 0x52420001 socket cgroupv2 level 2 "unified/rb/rb-2" drop`,
			`meta mark 0x52420002 socket cgroupv2 level 2 "unified/rb/rb-3" drop`,
			`meta mark 0x52420003 socket cgroupv2 level 2 "unified/rb/rb-2" drop`,
		}, []string{`meta mark 0x52420001 socket cgroupv2 level 2 "unified/rb/rb-3" drop`}},
		{"one way: only what the target sends", PartitionPlan{Table: "t-2", Nodes: nodes, Target: 0, OneWay: true}, []string{
			`meta mark 0x52420001 socket cgroupv2 level 2 "unified/rb/rb-2" drop`,
			`meta mark 0x52420001 socket cgroupv2 level 2 "unified/rb/rb-3" drop`,
		}, []string{`meta mark 0x52420002 socket cgroupv2 level 2 "unified/rb/rb-1" drop`, `meta mark 0x52420003 socket cgroupv2 level 2 "unified/rb/rb-1" drop`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := partitionScript(tc.plan)
			if !strings.HasPrefix(s, "table inet "+tc.plan.Table+" {") {
				t.Errorf("script does not create its own table %s:\n%s", tc.plan.Table, s)
			}
			for _, want := range append(append([]string(nil), marks...), tc.drops...) {
				if !strings.Contains(s, want+"\n") {
					t.Errorf("script lacks %q:\n%s", want, s)
				}
			}
			for _, no := range tc.absent {
				if strings.Contains(s, no) {
					t.Errorf("script has %q:\n%s", no, s)
				}
			}
			if got := strings.Count(s, " drop\n"); got != len(tc.drops) {
				t.Errorf("%d drop rules, want %d:\n%s", got, len(tc.drops), s)
			}
		})
	}
}

func TestCgroup2MountOf(t *testing.T) {
	for _, tc := range []struct {
		line, want string
		ok         bool
	}{
		{"35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate", "/sys/fs/cgroup/unified", true},
		{"31 24 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw", "/sys/fs/cgroup", true},
		{"36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:11 - cgroup cgroup rw,memory", "/sys/fs/cgroup/memory", false},
		{"garbage", "", false},
	} {
		got, ok := cgroup2MountOf(tc.line)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("cgroup2MountOf(%q) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCgroupRef(t *testing.T) {
	for _, tc := range []struct {
		mount, dir string
		want       CgroupRef
	}{
		{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified/rb/rb-2", CgroupRef{Path: "unified/rb/rb-2", Level: 2}},
		{"/sys/fs/cgroup", "/sys/fs/cgroup/rb/rb-2", CgroupRef{Path: "rb/rb-2", Level: 2}},
	} {
		c := &Cgroups{mount: tc.mount}
		if got := c.Ref(tc.dir); got != tc.want {
			t.Errorf("Ref(%s) under %s = %+v, want %+v", tc.dir, tc.mount, got, tc.want)
		}
	}
}

func TestPlanWorkload(t *testing.T) {
	for _, tc := range []struct {
		draw float64
		size int
		want workloadStep
	}{
		{0.1, 3, workloadStep{Target: workloadDeployment, Replicas: 3}},
		{0.5, 3, workloadStep{Target: workloadDeployment, Rollout: true}},
		{0.9, 0, workloadStep{Target: workloadReplicaSet, Replicas: 0}},
	} {
		if got := planWorkload(tc.draw, tc.size); got != tc.want {
			t.Errorf("planWorkload(%v, %d) = %+v, want %+v", tc.draw, tc.size, got, tc.want)
		}
	}
}

// TestRelistedDeletesWhatALISTLacks: after a watch could not resume, an object the new LIST lacks
// was deleted while nobody watched; its deletion is placed at the LIST's resourceVersion.
func TestRelistedDeletesWhatALISTLacks(t *testing.T) {
	known := map[string]ObjectVersion{
		"a": {Kind: KindPod, Namespace: "ns", Name: "pa", UID: "a", RV: 5, Active: true, Owner: "rs"},
		"b": {Kind: KindPod, Namespace: "ns", Name: "pb", UID: "b", RV: 6, Active: true, Owner: "rs"},
	}
	items := []ObjectVersion{{Kind: KindPod, Namespace: "ns", Name: "pa", UID: "a", RV: 9, Active: true, Owner: "rs"}}
	got := relisted(known, items, KindPod, 12)
	want := []ObjectVersion{items[0], {Kind: KindPod, Namespace: "ns", Name: "pb", UID: "b", RV: 12, Deleted: true, Owner: "rs"}}
	if fmt.Sprint(got) != fmt.Sprint(want) || got[1] != want[1] {
		t.Fatalf("relisted = %+v, want %+v", got, want)
	}
}

func TestVersionOf(t *testing.T) {
	now := metav1.NewTime(time.Unix(100, 0))
	micro := metav1.NewMicroTime(time.Unix(200, 5))
	owner := []metav1.OwnerReference{{UID: "rs-uid", Controller: ptr.To(true)}, {UID: "other"}}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want ObjectVersion
	}{
		{"running pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "7", OwnerReferences: owner},
			Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "p", UID: "u", RV: 7, NodeName: "n1", Active: true, Owner: "rs-uid", Running: true}},
		{"terminating pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u", ResourceVersion: "8", DeletionTimestamp: &now}},
			ObjectVersion{Kind: KindPod, Name: "p", UID: "u", RV: 8}},
		{"finished pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u", ResourceVersion: "9"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
			ObjectVersion{Kind: KindPod, Name: "p", UID: "u", RV: 9}},
		{"replicaset", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "r", ResourceVersion: "10", Generation: 3},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4)}, Status: appsv1.ReplicaSetStatus{ObservedGeneration: 2}},
			ObjectVersion{Kind: KindReplicaSet, Name: "r", UID: "r", RV: 10, Replicas: 4, Generation: 3, ObservedGeneration: 2}},
		{"lease", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", UID: "l", ResourceVersion: "11"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("rb-1_42"), AcquireTime: &micro, RenewTime: &micro, LeaseDurationSeconds: ptr.To[int32](15)}},
			ObjectVersion{Kind: KindLease, Name: "l", UID: "l", RV: 11, Holder: "rb-1_42", AcquireTime: micro.UnixNano(), RenewTime: micro.UnixNano(), LeaseSeconds: 15}},
		{"API server identity lease", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "apiserver-x", UID: "i", ResourceVersion: "12",
			Labels: map[string]string{identityLeaseLabel: "kube-apiserver"}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("apiserver-x_1")}},
			ObjectVersion{}},
	} {
		got, ok := versionOf(tc.obj)
		if tc.want == (ObjectVersion{}) {
			if ok {
				t.Errorf("%s: versionOf kept %+v", tc.name, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("%s: versionOf = %+v, %v; want %+v", tc.name, got, ok, tc.want)
		}
	}
}

// TestFillLeavesNoRoom: fill takes every byte of its filesystem (a small tmpfs here).
func TestFillLeavesNoRoom(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("no tmpfs here: %v", err)
	}
	defer func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) }()
	filled, err := fill(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if left := int64(st.Bavail) * st.Bsize; left > leftAfterFill || filled < 7<<20 {
		t.Errorf("filled %d bytes, %d left; want the 8 MiB taken", filled, left)
	}
	if err := os.WriteFile(filepath.Join(dir, "one-more"), make([]byte, 8<<10), 0o600); err == nil {
		t.Error("a write found room after fill")
	}
}

// TestCountObjectsRunningOn counts each pod once on the node that reported it Running, not its
// versions, nor pods never Running.
func TestCountObjectsRunningOn(t *testing.T) {
	c := CountObjects([]ObjectVersion{
		{Kind: KindPod, UID: "a", RV: 1, NodeName: "w1"},
		{Kind: KindPod, UID: "a", RV: 2, NodeName: "w1", Running: true},
		{Kind: KindPod, UID: "a", RV: 3, NodeName: "w1", Running: true},
		{Kind: KindPod, UID: "b", RV: 4, NodeName: "w2", Running: true},
		{Kind: KindPod, UID: "c", RV: 5, NodeName: "w2"},
		{Kind: KindPod, UID: "d", RV: 6},
	})
	if c.Pods != 4 || c.Bound != 3 || c.RunningOn["w1"] != 1 || c.RunningOn["w2"] != 1 || len(c.RunningOn) != 2 {
		t.Fatalf("counts %+v", c)
	}
}
