package replicaset

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func TestOutcomeOf(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want createOutcome
	}{
		{"answered", nil, podCreated},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), podNotCreated},
		{"forbidden by quota", apierrors.NewForbidden(pods, "p", errors.New("exceeded quota")), podNotCreated},
		{"name taken", apierrors.NewAlreadyExists(pods, "p"), podNotCreated},
		{"throttled", apierrors.NewTooManyRequests("busy", 1), podNotCreated},
		{"etcd failed under it", apierrors.NewInternalError(errors.New("etcd did not complete the create")), podMaybeCreated},
		{"server timeout", apierrors.NewTimeoutError("create", 5), podMaybeCreated},
		{"unavailable", apierrors.NewServiceUnavailable("no etcd"), podMaybeCreated},
		{"connection lost", errors.New("read tcp: connection reset by peer"), podMaybeCreated},
		{"client deadline", context.DeadlineExceeded, podMaybeCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outcomeOf(tc.err); got != tc.want {
				t.Fatalf("outcomeOf(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestGeneratedNameIsLikeTheAPIServers(t *testing.T) {
	if n := generatedName("rs-"); len(n) != 8 || !strings.HasPrefix(n, "rs-") {
		t.Fatalf("generatedName(rs-) = %q", n)
	}
	if n := generatedName(strings.Repeat("a", 80) + "-"); len(n) != 63 {
		t.Fatalf("a long base gives %d characters, want 63", len(n))
	}
}

// lostAnswer makes the fake API server's pod creates fail with err; land says whether the pod
// is written first (an answer lost after the write) or not.
func lostAnswer(f *fixture, err error, land bool) {
	f.env.Client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if land {
			pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
			if terr := f.env.Client.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace); terr != nil {
				return true, nil, terr
			}
		}
		return true, nil, err
	})
}

// A create whose write landed but whose answer was lost is found by its name: counted as made,
// its creation stays expected, and the next sync creates nothing (upstream's controller counts it
// as not made and creates one more pod).
func TestCreateWhoseAnswerWasLostIsFoundByName(t *testing.T) {
	f := newFixture(t, []*appsv1.ReplicaSet{ctrltest.MakeReplicaSet("rs", 1, web)}, nil)
	lostAnswer(f, apierrors.NewInternalError(errors.New("etcd did not complete the create")), true)
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if f.ctrl.Expectations().Satisfied("default/rs") {
		t.Fatal("the pod found by its name is not expected")
	}
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatal(err)
	}
	creates := 0
	for _, a := range f.env.Writes() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			creates++
		}
	}
	if creates != 1 {
		t.Fatalf("%d pod creates, want 1", creates)
	}
	if ev := f.env.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal SuccessfulCreate Created pod: rs-") {
		t.Fatalf("events = %q", ev)
	}
}

// A create that failed before its write is not found: counted as not made, so the next sync
// creates again.
func TestCreateNotWrittenIsNotExpected(t *testing.T) {
	f := newFixture(t, []*appsv1.ReplicaSet{ctrltest.MakeReplicaSet("rs", 1, web)}, nil)
	lostAnswer(f, apierrors.NewInternalError(errors.New("etcd did not complete the create")), false)
	if err := f.sync(t, "default/rs"); err == nil {
		t.Fatal("want the create error")
	}
	if !f.ctrl.Expectations().Satisfied("default/rs") {
		t.Fatal("a create that was not written is still expected")
	}
}

// A create whose pod cannot be read back either stays expected: the informer shows the pod if
// it was made, and the expectation times out if not.
func TestCreateStillUnknownStaysExpected(t *testing.T) {
	f := newFixture(t, []*appsv1.ReplicaSet{ctrltest.MakeReplicaSet("rs", 1, web)}, nil)
	lostAnswer(f, apierrors.NewTimeoutError("create", 5), false)
	f.env.Client.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("no etcd")
	})
	err := f.sync(t, "default/rs")
	if !errors.Is(err, errCreateUnresolved) {
		t.Fatalf("sync: %v, want %v", err, errCreateUnresolved)
	}
	if f.ctrl.Expectations().Satisfied("default/rs") {
		t.Fatal("a create that may have been made is not expected")
	}
}
