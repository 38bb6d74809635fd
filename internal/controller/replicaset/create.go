package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// createOutcome is what the answer to a pod create says about whether the pod exists.
type createOutcome int

const (
	// podCreated: the API server created it.
	podCreated createOutcome = iota
	// podNotCreated: the API server refused it (a 4xx status: invalid, forbidden, over quota,
	// throttled, a name taken); nothing was written.
	podNotCreated
	// podMaybeCreated: the request failed after it may have been written (a 5xx status, a
	// timeout, a broken connection): the pod may exist.
	podMaybeCreated
)

// outcomeOf classifies a create's error.
func outcomeOf(err error) createOutcome {
	if err == nil {
		return podCreated
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := status.Status().Code; code >= 400 && code < 500 {
			return podNotCreated
		}
	}
	return podMaybeCreated
}

// maxGeneratedNameLength leaves room for the random suffix in a 63-character name, as the API
// server's generateName does.
const maxGeneratedNameLength = 58

// generatedName names a pod as the API server's generateName would (the base, truncated, and
// five random characters). The controller names its pods itself so that a create whose answer
// was lost can be looked up by name.
func generatedName(base string) string {
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	return base + utilrand.String(5)
}

// errCreateUnresolved is a create whose outcome is still unknown after looking the pod up.
var errCreateUnresolved = errors.New("the pod may have been created")

// createPod creates one pod of rs and reports whether it exists now. A create that failed after
// it may have been written is resolved by reading the pod by its name: upstream's controller
// counts every failed create as not made and creates another on its next sync, which made a
// ReplicaSet one pod over its replicas when etcd was killed under a create whose write had
// landed (the robustness suite's ext-kill-etcd). A create whose pod cannot be read either is
// counted in unresolved: its creation stays expected until the informer shows the pod or the
// expectation times out.
func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod, unresolved *atomic.Int32) error {
	pod.Name = generatedName(pod.GenerateName)
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if outcomeOf(err) == podMaybeCreated {
		got, getErr := c.client.CoreV1().Pods(rs.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case getErr == nil && metav1.IsControlledBy(got, rs):
			created, err = got, nil
		case apierrors.IsNotFound(getErr):
		default:
			unresolved.Add(1)
			err = fmt.Errorf("%w: %w (reading it back: %v)", errCreateUnresolved, err, getErr)
		}
	}
	if err != nil {
		c.recorder.Eventf(c.owner.EventObject(rs), corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.recorder.Eventf(c.owner.EventObject(rs), corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", created.Name)
	return nil
}
