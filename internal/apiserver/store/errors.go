package store

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/storage"
)

// User-visible messages that clients (kubectl, client-go reflectors) match on; they are
// Kubernetes' wording.
const (
	// OptimisticLockErrorMsg is the conflict message for an update computed from a stale object.
	OptimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"
	listExpiredMsg         = "The resourceVersion for the provided list is too old."
	continueExpiredMsg     = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter."
	inconsistentContinueMsg = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
	// tooLargeRetrySeconds is how long a client should wait before asking again for a revision the
	// store has not reached.
	tooLargeRetrySeconds = 1
)

// ---- The one place a failed precondition becomes a 409 Conflict. ----

// errStale is the conflict of a write computed from an object that has changed since.
func errStale(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, errors.New(OptimisticLockErrorMsg))
}

// CheckResourceVersion refuses a write computed from stored revision want when the object is at
// stored now; an empty want is no precondition. Update checks it on every attempt; a handler may
// check it earlier (a patch) to fail before decoding further.
func CheckResourceVersion(gr schema.GroupResource, name, want, stored string) error {
	if want != "" && want != stored {
		return errStale(gr, name)
	}
	return nil
}

// checkPreconditions compares a request's uid/resourceVersion preconditions with the stored object
// (m) and words a mismatch as Kubernetes does.
func checkPreconditions(gr schema.GroupResource, name string, p *metav1.Preconditions, m metav1.Object) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		//lint:ignore ST1005 Kubernetes' wording, which clients match.
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		//lint:ignore ST1005 Kubernetes' wording, which clients match.
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// storageConflict words a Conflict storage reported: a failed storage precondition with
// Kubernetes' storage error text, a lost compare-and-swap as a stale write.
func storageConflict(se *storage.Error, gr schema.GroupResource, name string) error {
	if se.Precondition {
		return apierrors.NewConflict(gr, name, fmt.Errorf(
			"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: %s", se.Key, se.Detail))
	}
	return errStale(gr, name)
}

// StatusReasonInsufficientStorage is the reason of a 507: Kubernetes has none of its own, as
// kube-apiserver answers etcd's "database space exceeded" with a 500.
const StatusReasonInsufficientStorage metav1.StatusReason = "InsufficientStorage"

// ToAPIError maps a storage error to the Kubernetes Status error the API returns for it. Errors that
// already are API status errors (for example from an UpdateFunc) pass through; anything else is an
// internal error. name is the object's name ("" for collection operations).
func ToAPIError(err error, gr schema.GroupResource, name string) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	var se *storage.Error
	if !errors.As(err, &se) {
		return apierrors.NewInternalError(err)
	}
	switch se.Code {
	case storage.ErrCodeNotFound:
		return apierrors.NewNotFound(gr, name)
	case storage.ErrCodeExists:
		return apierrors.NewAlreadyExists(gr, name)
	case storage.ErrCodeConflict:
		return storageConflict(se, gr, name)
	case storage.ErrCodeExpired:
		return expiredError(se)
	case storage.ErrCodeTooLargeRevision:
		tooLarge := apierrors.NewTimeoutError(
			fmt.Sprintf("Too large resource version: %d, current: %d", se.Requested, se.Revision), tooLargeRetrySeconds)
		tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{
			Type:    metav1.CauseTypeResourceVersionTooLarge,
			Message: "Too large resource version",
		}}
		return tooLarge
	case storage.ErrCodeNoSpace:
		// 507 as WebDAV defines it: the write cannot be stored; reads and deletes still work.
		msg := fmt.Sprintf("etcd refused to store this %s: no space (NOSPACE); reads and deletes still work, writes resume once space is freed", gr.String())
		if se.Err != nil {
			msg += ": " + se.Err.Error()
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage, Reason: StatusReasonInsufficientStorage, Message: msg,
		}}
	case storage.ErrCodeUnreachable:
		op := se.Op
		if op == "" {
			op = "request"
		}
		// Without quorum etcd answers no write, and a retried request would only wait again:
		// 503 with the cause, and no Retry-After that would make clients retry in a loop.
		msg := fmt.Sprintf("etcd did not complete the %s of %s: the etcd cluster has lost quorum (no leader) or is unreachable", op, gr.String())
		if se.Err != nil {
			msg += ": " + se.Err.Error()
		}
		return apierrors.NewServiceUnavailable(msg)
	default:
		return apierrors.NewInternalError(err)
	}
}

func expiredError(se *storage.Error) error {
	switch {
	case se.Continue != "":
		expired := apierrors.NewResourceExpired(inconsistentContinueMsg)
		expired.ErrStatus.ListMeta.Continue = se.Continue
		return expired
	case se.Op == storage.OpList && se.Detail == storage.DetailContinueExpired:
		return apierrors.NewResourceExpired(continueExpiredMsg)
	case se.Op == storage.OpList:
		return apierrors.NewResourceExpired(listExpiredMsg)
	default:
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", se.Requested, se.Revision))
	}
}
