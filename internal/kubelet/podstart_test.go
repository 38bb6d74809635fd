package kubelet

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestNewPodStartCRICalls starts one pod and reports the CRI calls its first
// sync made. A new pod's sandbox is not listed again after RunPodSandbox (its
// status answers), its status is read once, and the refresh after starting the
// containers does not list sandboxes.
func TestNewPodStartCRICalls(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("web").obj())
	h.waitPod("default", "web", "running", podRunning)
	var methods []string
	counts := map[string]int{}
	for _, c := range h.runtime.Calls() {
		methods = append(methods, c.Method)
		counts[c.Method]++
	}
	t.Logf("CRI calls until the pod ran: %v", counts)
	run := slices.Index(methods, "RunPodSandbox")
	start := slices.Index(methods, "StartContainer")
	if run < 0 || start < run || start+1 >= len(methods) {
		t.Fatalf("calls %v", methods)
	}
	// From the sandbox to the refresh after the start: its status once, the image check, the
	// container, then only the containers are listed again.
	want := []string{"RunPodSandbox", "PodSandboxStatus", "ImageStatus", "CreateContainer", "StartContainer", "ListContainers"}
	if got := methods[run : start+2]; !slices.Equal(got, want) {
		t.Errorf("calls from the sandbox on: %v, want %v", got, want)
	}
}

// TestDeletionDuringStatusWrite: the informer's update carrying a deletion can
// arrive while the kubelet's status write is in flight; the write's older
// answer must not replace it, or the pod is never stopped.
func TestDeletionDuringStatusWrite(t *testing.T) {
	k := &Kubelet{pods: map[types.UID]*podEntry{}}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "p", ResourceVersion: "10"}}
	deleting := running.DeepCopy()
	deleting.ResourceVersion = "12"
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(time.Unix(100, 0)))
	k.pods["u1"] = &podEntry{pod: deleting}
	written := running.DeepCopy()
	written.ResourceVersion = "11" // the status write's answer, older than the deletion
	k.keepNewer(written)
	if got := k.pods["u1"].pod; got.DeletionTimestamp == nil {
		t.Fatalf("status write answer (rv %s) replaced the deletion (rv 12)", got.ResourceVersion)
	}
	newer := deleting.DeepCopy()
	newer.ResourceVersion = "13"
	k.keepNewer(newer)
	if got := k.pods["u1"].pod.ResourceVersion; got != "13" {
		t.Errorf("newer write not kept: rv %s", got)
	}
}

func TestNewerPod(t *testing.T) {
	at := ptr.To(metav1.NewTime(time.Unix(100, 0)))
	pod := func(rv string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
		if deleting {
			p.DeletionTimestamp = at
		}
		return p
	}
	cases := []struct {
		name               string
		current, candidate *corev1.Pod
		want               bool
	}{
		{"nothing yet", nil, pod("5", false), true},
		{"later revision", pod("5", false), pod("6", false), true},
		{"earlier revision", pod("6", true), pod("5", false), false},
		{"same revision", pod("6", false), pod("6", false), false},
		{"revisions compare as numbers", pod("9", false), pod("10", false), true},
		{"no revisions (fake clients)", pod("", false), pod("", false), true},
		{"no revisions, candidate loses the deletion", pod("", true), pod("", false), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := newerPod(tc.current, tc.candidate); got != tc.want {
				t.Errorf("newerPod = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSandboxCreationIsBounded: with one slot, a sandbox waits for the other's RunPodSandbox to
// return.
func TestSandboxCreationIsBounded(t *testing.T) {
	k := &Kubelet{sandboxSlots: make(chan struct{}, 1)}
	k.sandboxSlots <- struct{}{} // another pod's sandbox is being created
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := k.runSandbox(ctx, nil)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("runSandbox returned with no free slot: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("runSandbox without a slot: no error after its context ended")
	}
}
