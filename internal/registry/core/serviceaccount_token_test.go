package core

import (
	"errors"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// fakeIssuer records the requests it signs.
type fakeIssuer struct {
	issued []serviceaccount.Request
	fail   error
}

func (f *fakeIssuer) Issue(req serviceaccount.Request, now time.Time) (string, time.Time, error) {
	if f.fail != nil {
		return "", time.Time{}, f.fail
	}
	f.issued = append(f.issued, req)
	return "token-" + req.ServiceAccount.Name, now.Add(req.Expiration), nil
}

func TestServiceAccountToken(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default", UID: "uid-sa"}}
	pod := makePod("web").node("n1").with(func(p *corev1.Pod) { p.UID = "uid-pod" }).obj()
	unscheduled := makePod("web").with(func(p *corev1.Pod) { p.UID = "uid-pod" }).obj()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-node"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", UID: "uid-secret"}}
	secs := func(v int64) *int64 { return &v }
	ref := func(kind, name, uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{Kind: kind, APIVersion: "v1", Name: name, UID: k8stypes.UID(uid)}
	}
	tests := []struct {
		name    string
		objs    []runtime.Object
		spec    authenticationv1.TokenRequestSpec
		noIssue bool
		// code 0 is success, with want the request signed.
		code    int32
		message string
		causes  []string
		want    serviceaccount.Request
	}{
		{name: "defaults: an hour and the server's audiences", objs: []runtime.Object{sa},
			want: serviceaccount.Request{Audiences: []string{"api"}, Expiration: time.Hour}},
		{name: "the caller's audiences and lifetime", objs: []runtime.Object{sa}, spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: secs(600)},
			want: serviceaccount.Request{Audiences: []string{"vault"}, Expiration: 10 * time.Minute}},
		{name: "bound to a pod, which names its node", objs: []runtime.Object{sa, pod, node}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "web", "uid-pod")},
			want: serviceaccount.Request{Audiences: []string{"api"}, Expiration: time.Hour,
				BoundPod: &serviceaccount.Ref{Name: "web", UID: "uid-pod"}, BoundNode: &serviceaccount.Ref{Name: "n1", UID: "uid-node"}}},
		{name: "bound to a pod whose node is gone", objs: []runtime.Object{sa, pod}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "web", "")},
			want: serviceaccount.Request{Audiences: []string{"api"}, Expiration: time.Hour,
				BoundPod: &serviceaccount.Ref{Name: "web", UID: "uid-pod"}, BoundNode: &serviceaccount.Ref{Name: "n1"}}},
		{name: "bound to an unscheduled pod", objs: []runtime.Object{sa, unscheduled}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Pod", "web", "")},
			want: serviceaccount.Request{Audiences: []string{"api"}, Expiration: time.Hour, BoundPod: &serviceaccount.Ref{Name: "web", UID: "uid-pod"}}},
		{name: "bound to a secret", objs: []runtime.Object{sa, secret}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Secret", "s", "")},
			want: serviceaccount.Request{Audiences: []string{"api"}, Expiration: time.Hour, BoundSecret: &serviceaccount.Ref{Name: "s", UID: "uid-secret"}}},
		{name: "bound to a node", objs: []runtime.Object{sa, node}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Node", "n1", "uid-node")},
			want: serviceaccount.Request{Audiences: []string{"api"}, Expiration: time.Hour, BoundNode: &serviceaccount.Ref{Name: "n1", UID: "uid-node"}}},
		{name: "a bound object recreated since", objs: []runtime.Object{sa, secret}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Secret", "s", "uid-old")},
			code: 409, message: "the UID in the bound object reference (uid-old) does not match the UID in record"},
		{name: "a bound object that does not exist", objs: []runtime.Object{sa}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("Secret", "s", "")},
			code: 404, message: `secrets "s" not found`},
		{name: "a bound kind tokens cannot have", objs: []runtime.Object{sa}, spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref("ConfigMap", "c", "")},
			code: 422, message: `TokenRequest.authentication.k8s.io "robot" is invalid`, causes: []string{"spec.boundObjectRef.kind:FieldValueNotSupported"}},
		{name: "shorter than ten minutes", objs: []runtime.Object{sa}, spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: secs(599)},
			code: 422, message: "may not specify a duration less than 10 minutes", causes: []string{"spec.expirationSeconds:FieldValueInvalid"}},
		{name: "longer than 2^32 seconds", objs: []runtime.Object{sa}, spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: secs(1<<32 + 1)},
			code: 422, causes: []string{"spec.expirationSeconds:FieldValueTooLong"}},
		{name: "no such account", code: 404, message: `serviceaccounts "robot" not found`},
		{name: "no issuer", objs: []runtime.Object{sa}, noIssue: true, code: 503, message: "not configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores := newFixtureStores(tt.objs...)
			issuer := &fakeIssuer{}
			env := fixtureEnv(stores)
			if !tt.noIssue {
				env.Tokens = &registry.TokenIssuing{Issuer: issuer, Audiences: []string{"api"}}
			}
			adm := &admissionRecorder{}
			tr := &authenticationv1.TokenRequest{Spec: tt.spec}
			out, err := runAction(t, "serviceaccounts", "token", env,
				registry.ActionRequest{Namespace: "default", Name: "robot", Body: tr, Admit: adm.admit})
			if len(stores.writes()) > 0 {
				t.Errorf("a token request wrote %q", stores.writes())
			}
			if tt.code != 0 {
				wantStatus(t, err, tt.code, tt.message, tt.causes...)
				if len(issuer.issued) > 0 {
					t.Errorf("signed %+v for a refused request", issuer.issued)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(adm.seen) != 1 || slices.Contains(adm.dryRun, true) {
				t.Errorf("admission saw %d requests (dry run %v), want one", len(adm.seen), adm.dryRun)
			}
			tt.want.Namespace, tt.want.ServiceAccount = "default", serviceaccount.Ref{Name: "robot", UID: "uid-sa"}
			if len(issuer.issued) != 1 || !equalRequests(issuer.issued[0], tt.want) {
				t.Fatalf("signed %+v, want %+v", issuer.issued, tt.want)
			}
			got := out.(*authenticationv1.TokenRequest)
			if got.Name != "robot" || got.Namespace != "default" || got.Status.Token != "token-robot" ||
				!got.Status.ExpirationTimestamp.Time.Equal(actionEpoch.Add(tt.want.Expiration)) || !got.CreationTimestamp.Time.Equal(actionEpoch) {
				t.Errorf("answer %+v", got)
			}
		})
	}
}

func equalRequests(a, b serviceaccount.Request) bool {
	refEq := func(x, y *serviceaccount.Ref) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Namespace == b.Namespace && a.ServiceAccount == b.ServiceAccount && slices.Equal(a.Audiences, b.Audiences) &&
		a.Expiration == b.Expiration && refEq(a.BoundPod, b.BoundPod) && refEq(a.BoundSecret, b.BoundSecret) && refEq(a.BoundNode, b.BoundNode)
}

func TestServiceAccountTokenSigningFails(t *testing.T) {
	stores := newFixtureStores(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default"}})
	env := fixtureEnv(stores)
	env.Tokens = &registry.TokenIssuing{Issuer: &fakeIssuer{fail: errors.New("no key")}}
	_, err := runAction(t, "serviceaccounts", "token", env,
		registry.ActionRequest{Namespace: "default", Name: "robot", Body: &authenticationv1.TokenRequest{}})
	wantStatus(t, err, 500, "no key")
}
