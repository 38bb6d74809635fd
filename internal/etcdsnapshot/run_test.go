package etcdsnapshot

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
)

// TestLeadTakesAndPrunes drives the scheduler's loop with a fake clock against a real embedded
// etcd: every run of an every-10-seconds schedule saves a verified snapshot with its checksum,
// retention 3 leaves the 3 newest, a snapshot saved by hand in the same directory survives, and
// the index ConfigMap and the Events say the same as the directory.
func TestLeadTakesAndPrunes(t *testing.T) {
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	etcdClient := etcdtest.Client(t, member)
	if _, err := etcdClient.Put(context.Background(), "/registry/configmaps/default/x", "v"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	handMade := filepath.Join(dir, "before-upgrade.db")
	if err := os.WriteFile(handMade, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	sched, err := ParseSchedule("*/10 * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(t0.Add(time.Second))
	client := fake.NewClientset()
	s := &Scheduler{
		Schedule: sched, Retention: 3, Dir: Dir{Path: dir}, Node: "cp-1", Etcd: etcdClient, Client: client,
		Clock: clk, Log: slog.New(slog.DiscardHandler),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Lead(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	const runs = 5
	for i := range runs {
		waitForTimer(t, clk)
		clk.Step(10 * time.Second)
		// Named for when it was taken: a second after each run's time, where the clock stands.
		want := FileName("cp-1", t0.Add(time.Duration(i+1)*10*time.Second+time.Second))
		waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, want)); return err == nil })
	}
	waitForTimer(t, clk) // the last run has pruned and recorded
	files, err := Dir{Path: dir}.Scheduled()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		if err := VerifyChecksum(filepath.Join(dir, f.Name)); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(dir, f.Name+ChecksumExt)); err != nil {
			t.Errorf("no checksum beside %s: %v", f.Name, err)
		}
	}
	want := []string{FileName("cp-1", t0.Add(31*time.Second)), FileName("cp-1", t0.Add(41*time.Second)), FileName("cp-1", t0.Add(51*time.Second))}
	if slices.Sort(names); !slices.Equal(names, want) {
		t.Fatalf("after %d runs with retention 3: %v, want %v", runs, names, want)
	}
	if _, err := os.Stat(handMade); err != nil {
		t.Fatalf("retention removed a snapshot it did not make: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName("cp-1", t0.Add(11*time.Second))+ChecksumExt)); !os.IsNotExist(err) {
		t.Fatalf("a pruned snapshot's checksum stayed: %v", err)
	}

	cm, err := client.CoreV1().ConfigMaps(IndexNamespace).Get(ctx, IndexName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := ParseIndex(cm)
	if err != nil {
		t.Fatal(err)
	}
	var recordedNames []string
	for _, r := range recorded {
		recordedNames = append(recordedNames, r.Name)
		if r.Node != "cp-1" || r.Revision == 0 || r.Size == 0 || len(r.SHA256) != 64 {
			t.Errorf("recorded %+v: want node, revision, size and sha256", r)
		}
	}
	if !slices.Equal(recordedNames, want) {
		t.Fatalf("index records %v, want %v", recordedNames, want)
	}
	events, err := client.CoreV1().Events(IndexNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range events.Items {
		reasons[e.Reason]++
		if e.InvolvedObject.Name != IndexName || e.Type != corev1.EventTypeNormal || e.Source.Host != "cp-1" {
			t.Errorf("event %+v", e)
		}
	}
	if reasons[ReasonSaved] != runs || reasons[ReasonPruned] != runs-3 {
		t.Fatalf("events by reason %v, want %d saved and %d pruned", reasons, runs, runs-3)
	}
}

// TestLeadRecordsFailure: a save that fails (etcd gone) is a Warning Event, no file, and the loop
// goes on to the next run instead of retrying at once.
func TestLeadRecordsFailure(t *testing.T) {
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	etcdClient := etcdtest.Client(t, member)
	member.Stop()
	sched, _ := ParseSchedule("*/10 * * * * *")
	clk := testingclock.NewFakeClock(t0.Add(time.Second))
	client := fake.NewClientset()
	dir := t.TempDir()
	s := &Scheduler{Schedule: sched, Retention: 3, Dir: Dir{Path: dir}, Node: "cp-1", Etcd: etcdClient, Client: client, SaveTimeout: time.Second, Clock: clk, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Lead(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	waitForTimer(t, clk)
	clk.Step(10 * time.Second)
	waitFor(t, func() bool {
		l, _ := client.CoreV1().Events(IndexNamespace).List(ctx, metav1.ListOptions{})
		return len(l.Items) > 0
	})
	waitForTimer(t, clk)
	l, _ := client.CoreV1().Events(IndexNamespace).List(ctx, metav1.ListOptions{})
	if len(l.Items) != 1 || l.Items[0].Reason != ReasonFailed || l.Items[0].Type != corev1.EventTypeWarning {
		t.Fatalf("events %+v, want one %s warning", l.Items, ReasonFailed)
	}
	if files, _ := (Dir{Path: dir}).All(); len(files) != 0 {
		t.Fatalf("a failed save left %+v", files)
	}
}

// waitForTimer waits until the loop waits on the fake clock.
func waitForTimer(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	waitFor(t, clk.HasWaiters)
}

// waitFor polls cond for the loop's goroutine (real etcd I/O takes real time); it yields rather
// than sleeps a fixed time.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
