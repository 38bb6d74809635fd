package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/computed"
)

// TestComputedResource serves componentstatuses from a computed store, as the cluster wires it:
// get, list and tables work through the ordinary handlers, watch and writes are refused.
func TestComputedResource(t *testing.T) {
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	statuses := func(context.Context) ([]runtime.Object, error) {
		return []runtime.Object{
			&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "scheduler"}, Conditions: []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}}},
			&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "etcd-0"}, Conditions: []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: "timeout"}}},
		}, nil
	}
	s, err := New(Config{
		Scheme:    scheme,
		Resources: builtin.Resources(),
		Storage: func(res *registry.Resource) (storage.Interface, error) {
			if res.Plural == "componentstatuses" {
				return computed.New(statuses, nil), nil
			}
			return nil, nil
		},
		Authenticator: AuthenticatorFunc(func(*http.Request) (*UserInfo, bool, error) {
			return &UserInfo{Name: "admin", Groups: []string{"system:masters"}}, true, nil
		}),
		Clock:  clocktesting.NewFakeClock(testEpoch),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, accept string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}

	list := &corev1.ComponentStatusList{}
	if rec := do(http.MethodGet, "/api/v1/componentstatuses", ""); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), list) != nil || len(list.Items) != 2 {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	one := &corev1.ComponentStatus{}
	if rec := do(http.MethodGet, "/api/v1/componentstatuses/etcd-0", ""); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), one) != nil || one.Conditions[0].Error != "timeout" {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	if rec := do(http.MethodGet, "/api/v1/componentstatuses/nope", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("get missing: %d %s", rec.Code, rec.Body)
	}
	table := &metav1.Table{}
	if rec := do(http.MethodGet, "/api/v1/componentstatuses", "application/json;as=Table;v=v1;g=meta.k8s.io"); rec.Code != http.StatusOK ||
		json.Unmarshal(rec.Body.Bytes(), table) != nil || len(table.Rows) != 2 || table.Rows[1].Cells[1] != "Unhealthy" {
		t.Fatalf("table: %d %s", rec.Code, rec.Body)
	}
	if rec := do(http.MethodGet, "/api/v1/componentstatuses?watch=true", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("watch: %d %s", rec.Code, rec.Body)
	}
	if rec := do(http.MethodDelete, "/api/v1/componentstatuses/etcd-0", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
}

// TestReviewRefusesTable: a review (a computed create) asked for a Table answers 406, as
// kube-apiserver does for a backend without a table convertor (the conformance spec "should
// return a 406 for a backend which does not implement metadata"); asked for JSON it answers.
func TestReviewRefusesTable(t *testing.T) {
	c := startTestCluster(t)
	ctx := context.Background()
	sar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}}}
	err := c.client.AuthorizationV1().RESTClient().Post().Resource("selfsubjectaccessreviews").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Body(sar).Do(ctx).Into(&metav1.Table{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusNotAcceptable {
		t.Fatalf("as=Table: %v", err)
	}
	got, err := c.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil || !got.Status.Allowed {
		t.Fatalf("json: %+v %v", got, err)
	}
}
