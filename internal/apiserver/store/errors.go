package storage

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// unreachableRetrySeconds is the Retry-After of a request that failed because etcd did not answer.
	unreachableRetrySeconds = 2
)

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
	var se *Error
	if !errors.As(err, &se) {
		return apierrors.NewInternalError(err)
	}
	switch se.Code {
	case ErrCodeNotFound:
		return apierrors.NewNotFound(gr, name)
	case ErrCodeExists:
		return apierrors.NewAlreadyExists(gr, name)
	case ErrCodeConflict:
		if se.Precondition {
			// Kubernetes reports failed preconditions with its storage error text.
			return apierrors.NewConflict(gr, name, fmt.Errorf(
				"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: %s", se.Key, se.Detail))
		}
		return apierrors.NewConflict(gr, name, errors.New(OptimisticLockErrorMsg))
	case ErrCodeExpired:
		return expiredError(se)
	case ErrCodeTooLargeRevision:
		tooLarge := apierrors.NewTimeoutError(
			fmt.Sprintf("Too large resource version: %d, current: %d", se.Requested, se.Revision), tooLargeRetrySeconds)
		tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{
			Type:    metav1.CauseTypeResourceVersionTooLarge,
			Message: "Too large resource version",
		}}
		return tooLarge
	case ErrCodeUnreachable:
		op := se.Op
		if op == "" {
			op = "request"
		}
		return apierrors.NewServerTimeout(gr, op, unreachableRetrySeconds)
	case ErrCodeInvalidObject:
		return apierrors.NewInternalError(err)
	default:
		return apierrors.NewInternalError(err)
	}
}

func expiredError(se *Error) error {
	switch {
	case se.Continue != "":
		expired := apierrors.NewResourceExpired(inconsistentContinueMsg)
		expired.ErrStatus.ListMeta.Continue = se.Continue
		return expired
	case se.Op == OpList && se.Detail == DetailContinueExpired:
		return apierrors.NewResourceExpired(continueExpiredMsg)
	case se.Op == OpList:
		return apierrors.NewResourceExpired(listExpiredMsg)
	default:
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", se.Requested, se.Revision))
	}
}

// DetailContinueExpired is the Detail of an Expired list error whose continue token is too old and
// for which no inconsistent continuation could be offered.
const DetailContinueExpired = "continue token expired"
