package store_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/storage"
)

func storageErr(code storage.ErrorCode, mutate func(*storage.Error)) error {
	e := storage.NewError(code, "/registry/pods/default/x", "", nil)
	if mutate != nil {
		mutate(e)
	}
	return fmt.Errorf("wrapped: %w", e)
}

func TestToAPIError(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	passThrough := apierrors.NewBadRequest("from tryUpdate")
	tests := []struct {
		name       string
		err        error
		gr         schema.GroupResource
		wantCode   int32
		wantReason metav1.StatusReason
		wantMsg    string
		check      func(t *testing.T, status metav1.Status)
	}{
		{
			name: "not found", err: storageErr(storage.ErrCodeNotFound, nil), gr: pods,
			wantCode: http.StatusNotFound, wantReason: metav1.StatusReasonNotFound,
			wantMsg: `pods "x" not found`,
		},
		{
			name: "not found in a group", err: storageErr(storage.ErrCodeNotFound, nil), gr: deployments,
			wantCode: http.StatusNotFound, wantReason: metav1.StatusReasonNotFound,
			wantMsg: `deployments.apps "x" not found`,
		},
		{
			name: "already exists", err: storageErr(storage.ErrCodeExists, nil), gr: pods,
			wantCode: http.StatusConflict, wantReason: metav1.StatusReasonAlreadyExists,
			wantMsg: `pods "x" already exists`,
		},
		{
			name: "stale update", err: storageErr(storage.ErrCodeConflict, nil), gr: pods,
			wantCode: http.StatusConflict, wantReason: metav1.StatusReasonConflict,
			wantMsg: `Operation cannot be fulfilled on pods "x": the object has been modified; please apply your changes to the latest version and try again`,
		},
		{
			name: "failed precondition",
			err: storageErr(storage.ErrCodeConflict, func(e *storage.Error) {
				e.Precondition = true
				e.Detail = "Precondition failed: UID in precondition: a, UID in object meta: b"
			}),
			gr: pods, wantCode: http.StatusConflict, wantReason: metav1.StatusReasonConflict,
			wantMsg: `Operation cannot be fulfilled on pods "x": StorageError: invalid object, Code: 4, Key: /registry/pods/default/x, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: a, UID in object meta: b`,
		},
		{
			name: "list at compacted revision",
			err: storageErr(storage.ErrCodeExpired, func(e *storage.Error) {
				e.Op, e.Requested, e.Revision = storage.OpList, 3, 10
			}),
			gr: pods, wantCode: http.StatusGone, wantReason: metav1.StatusReasonExpired,
			wantMsg: "The resourceVersion for the provided list is too old.",
		},
		{
			name: "expired continue with inconsistent continuation",
			err: storageErr(storage.ErrCodeExpired, func(e *storage.Error) {
				e.Op, e.Continue = storage.OpList, "next-token"
			}),
			gr: pods, wantCode: http.StatusGone, wantReason: metav1.StatusReasonExpired,
			wantMsg: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
			check: func(t *testing.T, status metav1.Status) {
				if status.ListMeta.Continue != "next-token" {
					t.Errorf("continue = %q, want next-token", status.ListMeta.Continue)
				}
			},
		},
		{
			name: "expired continue without continuation",
			err: storageErr(storage.ErrCodeExpired, func(e *storage.Error) {
				e.Op, e.Detail = storage.OpList, storage.DetailContinueExpired
			}),
			gr: pods, wantCode: http.StatusGone, wantReason: metav1.StatusReasonExpired,
			wantMsg: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
		},
		{
			name: "watch from compacted revision",
			err: storageErr(storage.ErrCodeExpired, func(e *storage.Error) {
				e.Op, e.Requested, e.Revision = storage.OpWatch, 5, 42
			}),
			gr: pods, wantCode: http.StatusGone, wantReason: metav1.StatusReasonExpired,
			wantMsg: "too old resource version: 5 (42)",
		},
		{
			name: "future revision",
			err: storageErr(storage.ErrCodeTooLargeRevision, func(e *storage.Error) {
				e.Op, e.Requested, e.Revision = storage.OpList, 100, 42
			}),
			gr: pods, wantCode: http.StatusGatewayTimeout, wantReason: metav1.StatusReasonTimeout,
			wantMsg: "Timeout: Too large resource version: 100, current: 42",
			check: func(t *testing.T, status metav1.Status) {
				if status.Details == nil || status.Details.RetryAfterSeconds != 1 {
					t.Fatalf("details = %+v, want retryAfterSeconds 1", status.Details)
				}
				if len(status.Details.Causes) != 1 || status.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
					t.Errorf("causes = %+v, want ResourceVersionTooLarge", status.Details.Causes)
				}
			},
		},
		{
			name: "etcd unreachable",
			err: storageErr(storage.ErrCodeUnreachable, func(e *storage.Error) {
				e.Op = storage.OpGet
			}),
			gr: pods, wantCode: http.StatusServiceUnavailable, wantReason: metav1.StatusReasonServiceUnavailable,
			wantMsg: "etcd did not complete the get of pods: the etcd cluster has lost quorum (no leader) or is unreachable",
			check: func(t *testing.T, status metav1.Status) {
				if status.Details != nil && status.Details.RetryAfterSeconds != 0 {
					t.Errorf("details = %+v, want no Retry-After: a retry would wait again", status.Details)
				}
			},
		},
		{
			name: "undecodable object", err: storageErr(storage.ErrCodeInvalidObject, nil), gr: pods,
			wantCode: http.StatusInternalServerError, wantReason: metav1.StatusReasonInternalError,
		},
		{
			name: "plain error", err: errors.New("boom"), gr: pods,
			wantCode: http.StatusInternalServerError, wantReason: metav1.StatusReasonInternalError,
			wantMsg: "Internal error occurred: boom",
		},
		{
			name: "status error passes through", err: fmt.Errorf("update: %w", passThrough), gr: pods,
			wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest,
			wantMsg: "from tryUpdate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := store.ToAPIError(tt.err, tt.gr, "x")
			var status apierrors.APIStatus
			if !errors.As(got, &status) {
				t.Fatalf("ToAPIError returned %T (%v), want an API status error", got, got)
			}
			s := status.Status()
			if s.Code != tt.wantCode || s.Reason != tt.wantReason {
				t.Errorf("code/reason = %d/%s, want %d/%s", s.Code, s.Reason, tt.wantCode, tt.wantReason)
			}
			if tt.wantMsg != "" && s.Message != tt.wantMsg {
				t.Errorf("message = %q\nwant      %q", s.Message, tt.wantMsg)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
	if store.ToAPIError(nil, pods, "x") != nil {
		t.Error("ToAPIError(nil) != nil")
	}
}
