package ttlafterfinished

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func finishedJob(ttl *int32, finishedAgo time.Duration, condition batchv1.JobConditionType) *batchv1.Job {
	at := metav1.NewTime(ctrltest.Epoch().Add(-finishedAgo))
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "uid-pi", ResourceVersion: "5"},
		Spec:       batchv1.JobSpec{TTLSecondsAfterFinished: ttl},
	}
	if condition != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: condition, Status: corev1.ConditionTrue, LastTransitionTime: at}}
		if condition == batchv1.JobComplete {
			j.Status.CompletionTime = &at
		}
	}
	return j
}

func TestTTL(t *testing.T) {
	tests := []struct {
		name       string
		job        *batchv1.Job
		wantDelete bool
		wantQueued bool // requeued for later
	}{
		{"completed past ttl", finishedJob(ptr.To[int32](60), 61*time.Second, batchv1.JobComplete), true, false},
		{"failed past ttl", finishedJob(ptr.To[int32](0), time.Second, batchv1.JobFailed), true, false},
		{"completed within ttl", finishedJob(ptr.To[int32](60), 30*time.Second, batchv1.JobComplete), false, true},
		{"running", finishedJob(ptr.To[int32](0), 0, ""), false, false},
		{"no ttl", finishedJob(nil, time.Hour, batchv1.JobComplete), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ctrltest.NewEnv(tt.job)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Batch().V1().Jobs().Informer(), tt.job)
			if err := c.Sync(context.Background(), "default/pi"); err != nil {
				t.Fatal(err)
			}
			writes := env.Writes()
			deleted := slices.Equal(ctrltest.Describe(writes), []string{"delete jobs pi"})
			if deleted != tt.wantDelete || (!tt.wantDelete && len(writes) != 0) {
				t.Fatalf("writes %q", ctrltest.Describe(writes))
			}
			if deleted {
				opts := writes[0].(clienttesting.DeleteAction).GetDeleteOptions()
				if *opts.PropagationPolicy != metav1.DeletePropagationForeground || *opts.Preconditions.ResourceVersion != "5" {
					t.Fatalf("delete options %+v", opts)
				}
			}
			if tt.wantQueued {
				env.Clock.Step(30 * time.Second)
				for range 1000 {
					if c.loop.Queue.Len() > 0 {
						return
					}
					time.Sleep(time.Millisecond)
				}
				t.Fatal("not requeued at expiry")
			}
		})
	}
}
