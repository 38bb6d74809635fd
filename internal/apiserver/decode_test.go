package apiserver

//lint:file-ignore SA1019 DeleteOptions.orphanDependents is deprecated but still accepted from clients, as Kubernetes accepts it.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseWriteOptions(t *testing.T) {
	tests := []struct {
		name      string
		query     string
		userAgent string
		want      writeOptions
		// wantErr is a fragment of the 400 message; "" means success.
		wantErr string
	}{
		{name: "defaults", userAgent: "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9", want: writeOptions{fieldManager: "kubectl", fieldValidation: "Warn"}},
		{name: "client-go default agent", userAgent: "skiff.test/v0.0.0 (linux/amd64) kubernetes/$Format", want: writeOptions{fieldManager: "skiff.test", fieldValidation: "Warn"}},
		{name: "explicit manager wins", query: "fieldManager=kubectl-client-side-apply", userAgent: "kubectl/v1.32.0", want: writeOptions{fieldManager: "kubectl-client-side-apply", fieldValidation: "Warn"}},
		{name: "dry run", query: "dryRun=All&fieldValidation=Strict", want: writeOptions{dryRun: true, fieldValidation: "Strict"}},
		{name: "ignore", query: "fieldValidation=Ignore", want: writeOptions{fieldValidation: "Ignore"}},
		{name: "warn", query: "fieldValidation=Warn", want: writeOptions{fieldValidation: "Warn"}},
		{name: "force", query: "force=true&fieldManager=m", want: writeOptions{force: true, fieldManager: "m", fieldValidation: "Warn"}},
		{name: "force false", query: "force=false", want: writeOptions{fieldValidation: "Warn"}},
		{name: "bad dry run", query: "dryRun=Some", wantErr: `Invalid dryRun value: "Some"`},
		{name: "one bad dry run among good ones", query: "dryRun=All&dryRun=x", wantErr: `Invalid dryRun value: "x"`},
		{name: "bad field validation", query: "fieldValidation=strict", wantErr: `fieldValidation: Unsupported value: "strict"`},
		// Booleans read as Kubernetes reads them: anything but "0" and "false" (any case) is true.
		{name: "force as Kubernetes reads it", query: "force=True&fieldManager=m", want: writeOptions{force: true, fieldManager: "m", fieldValidation: "Warn"}},
		{name: "force FALSE", query: "force=FALSE", want: writeOptions{fieldValidation: "Warn"}},
		{name: "manager too long", query: "fieldManager=" + strings.Repeat("m", 129), wantErr: "fieldManager: Too long"},
		{name: "manager not printable", query: "fieldManager=a%00b", wantErr: "fieldManager: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods?"+tt.query, nil)
			r.Header.Set("User-Agent", tt.userAgent)
			got, err := parseWriteOptions(r)
			if tt.wantErr != "" {
				st := statusOf(t, err)
				if st.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || !strings.Contains(st.Message, tt.wantErr) {
					t.Errorf("error = %d %s %q, want 400 BadRequest containing %q", st.Code, st.Reason, st.Message, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseWriteOptions(%q) = %+v, want %+v", tt.query, got, tt.want)
			}
		})
	}
}

func TestManagerFromUserAgent(t *testing.T) {
	for ua, want := range map[string]string{
		"kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9": "kubectl",
		"kube-controller-manager/v1.32.0":                  "kube-controller-manager",
		"no-slash":                                         "no-slash",
		"":                                                 "",
		"/leading":                                         "",
		strings.Repeat("x", 200) + "/v1":                   strings.Repeat("x", 128),
	} {
		if got := managerFromUserAgent(ua); got != want {
			t.Errorf("managerFromUserAgent(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestParseDeleteOptions(t *testing.T) {
	s := newStorelessServer(t)
	h := handlerOf(t, s, podsGVR)
	int64p := func(n int64) *int64 { return &n }
	policyp := func(p metav1.DeletionPropagation) *metav1.DeletionPropagation { return &p }
	boolp := func(b bool) *bool { return &b }
	uidp := func(u types.UID) *types.UID { return &u }
	tests := []struct {
		name    string
		query   string
		body    string
		want    *metav1.DeleteOptions
		wantErr string
	}{
		{name: "none", want: &metav1.DeleteOptions{}},
		{name: "whitespace body", body: " \n", want: &metav1.DeleteOptions{}},
		{name: "grace from query", query: "gracePeriodSeconds=30", want: &metav1.DeleteOptions{GracePeriodSeconds: int64p(30)}},
		{name: "negative grace is immediate", query: "gracePeriodSeconds=-5", want: &metav1.DeleteOptions{GracePeriodSeconds: int64p(0)}},
		{name: "propagation from query", query: "propagationPolicy=Foreground", want: &metav1.DeleteOptions{PropagationPolicy: policyp(metav1.DeletePropagationForeground)}},
		{name: "orphan from query", query: "orphanDependents=true", want: &metav1.DeleteOptions{OrphanDependents: boolp(true)}},
		{name: "orphan from body (client-go)", body: `{"orphanDependents":true,"preconditions":{"uid":"u1"}}`,
			want: &metav1.DeleteOptions{OrphanDependents: boolp(true), Preconditions: &metav1.Preconditions{UID: uidp("u1")}}},
		{name: "dry run from query", query: "dryRun=All", want: &metav1.DeleteOptions{DryRun: []string{"All"}}},
		{
			name: "typed body (kubectl)", body: `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,"propagationPolicy":"Background"}`,
			want: &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}, GracePeriodSeconds: int64p(0), PropagationPolicy: policyp(metav1.DeletePropagationBackground)},
		},
		{
			name: "untyped body (client-go)", body: `{"preconditions":{"resourceVersion":"12"},"propagationPolicy":"Orphan"}`,
			want: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: strp("12")}, PropagationPolicy: policyp(metav1.DeletePropagationOrphan)},
		},
		{
			name: "query overrides body", query: "gracePeriodSeconds=1", body: `{"gracePeriodSeconds":60}`,
			want: &metav1.DeleteOptions{GracePeriodSeconds: int64p(1)},
		},
		{name: "bad grace", query: "gracePeriodSeconds=soon", wantErr: `invalid gracePeriodSeconds "soon"`},
		{name: "bad propagation", query: "propagationPolicy=Sideways", wantErr: `propagationPolicy: Unsupported value: "Sideways"`},
		{name: "bad propagation in body", body: `{"propagationPolicy":"sideways"}`, wantErr: `propagationPolicy: Unsupported value: "sideways"`},
		{name: "orphan as Kubernetes reads it", query: "orphanDependents=True", want: &metav1.DeleteOptions{OrphanDependents: boolp(true)}},
		{name: "orphan False", query: "orphanDependents=False", want: &metav1.DeleteOptions{OrphanDependents: boolp(false)}},
		{name: "orphan and propagation", query: "orphanDependents=false&propagationPolicy=Background", wantErr: "orphanDependents and deletionPropagation cannot be both set"},
		{name: "bad dry run", query: "dryRun=Most", wantErr: `Invalid dryRun value: "Most"`},
		{name: "bad dry run in body", body: `{"dryRun":["Most"]}`, wantErr: `Invalid dryRun value: "Most"`},
		{name: "garbage body", body: `{not json`, wantErr: "invalid delete options"},
		{name: "wrong field type", body: `{"gracePeriodSeconds":"ten"}`, wantErr: "invalid delete options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodDelete, "/api/v1/namespaces/default/pods/web?"+tt.query, nil)
			got, err := parseDeleteOptions(r, []byte(tt.body), h)
			if tt.wantErr != "" {
				st := statusOf(t, err)
				if st.Code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || !strings.Contains(st.Message, tt.wantErr) {
					t.Errorf("error = %d %s %q, want 400 BadRequest containing %q", st.Code, st.Reason, st.Message, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalJSON(t, got, tt.want) {
				t.Errorf("parseDeleteOptions = %s, want %s", jsonOf(got), jsonOf(tt.want))
			}
		})
	}
}

func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

func strp(s string) *string { return &s }

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return jsonOf(a) == jsonOf(b)
}

func TestDecodeObject(t *testing.T) {
	s := newStorelessServer(t)
	pods := handlerOf(t, s, podsGVR)
	const goodPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`
	const unknownField = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"bogus":1,"containers":[{"name":"app","image":"nginx"}]}}`
	const duplicateField = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","name":"web"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`
	tests := []struct {
		name            string
		body            string
		contentType     string
		fieldValidation string
		wantWarnings    []string
		wantCode        int32
		wantMessage     string
	}{
		{name: "good JSON", body: goodPod, fieldValidation: "Strict"},
		{name: "no type meta is the resource's", body: `{"metadata":{"name":"web"}}`, fieldValidation: "Strict"},
		{name: "good YAML", body: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n", contentType: "application/yaml", fieldValidation: "Strict"},
		{name: "unknown field, Strict", body: unknownField, fieldValidation: "Strict", wantCode: 400, wantMessage: `strict decoding error: unknown field "spec.bogus"`},
		{name: "unknown field, Warn", body: unknownField, fieldValidation: "Warn", wantWarnings: []string{`unknown field "spec.bogus"`}},
		{name: "unknown field, Ignore", body: unknownField, fieldValidation: "Ignore"},
		{name: "duplicate field, Strict", body: duplicateField, fieldValidation: "Strict", wantCode: 400, wantMessage: `duplicate field "metadata.name"`},
		{name: "duplicate field, Warn", body: duplicateField, fieldValidation: "Warn", wantWarnings: []string{`duplicate field "metadata.name"`}},
		{name: "wrong kind", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"}}`, fieldValidation: "Strict", wantCode: 400, wantMessage: `Service in version "v1" cannot be handled as a Pod`},
		{name: "wrong version", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`, fieldValidation: "Ignore", wantCode: 400},
		{name: "unregistered kind", body: `{"apiVersion":"v1","kind":"Frobnicator"}`, fieldValidation: "Warn", wantCode: 400, wantMessage: `Frobnicator in version "v1" cannot be handled as a Pod: no kind "Frobnicator" is registered`},
		{name: "not JSON", body: `{"apiVersion":`, fieldValidation: "Strict", wantCode: 400, wantMessage: `Pod in version "v1" cannot be handled as a Pod`},
		{name: "wrong field type", body: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":"many"}}`, fieldValidation: "Ignore", wantCode: 400},
		{name: "unsupported media type", body: goodPod, contentType: "text/plain", fieldValidation: "Strict", wantCode: 415, wantMessage: "the body of the request was in an unknown format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, warnings, err := pods.decodeObject([]byte(tt.body), tt.contentType, tt.fieldValidation)
			if tt.wantCode != 0 {
				st := statusOf(t, err)
				if st.Code != tt.wantCode || !strings.Contains(st.Message, tt.wantMessage) {
					t.Errorf("error = %d %q, want %d containing %q", st.Code, st.Message, tt.wantCode, tt.wantMessage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pod, ok := obj.(*corev1.Pod)
			if !ok || pod.Name != "web" {
				t.Fatalf("decoded %T %v, want pod web", obj, obj)
			}
			if len(warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings = %q, want %q", warnings, tt.wantWarnings)
			}
			for i := range warnings {
				if !strings.Contains(warnings[i], tt.wantWarnings[i]) {
					t.Errorf("warning %q does not contain %q", warnings[i], tt.wantWarnings[i])
				}
			}
		})
	}
}

// TestDecodeObjectAppliesDefaults checks that a decoded body carries the scheme's defaults, as the
// registry's validation expects.
func TestDecodeObjectAppliesDefaults(t *testing.T) {
	s := newStorelessServer(t)
	pods := handlerOf(t, s, podsGVR)
	obj, _, err := pods.decodeObject([]byte(`{"metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`), "", "Strict")
	if err != nil {
		t.Fatal(err)
	}
	pod := obj.(*corev1.Pod)
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.Containers[0].TerminationMessagePath == "" {
		t.Errorf("pod not defaulted: restartPolicy %q, terminationMessagePath %q", pod.Spec.RestartPolicy, pod.Spec.Containers[0].TerminationMessagePath)
	}
}

func TestDecodeObjectProtobuf(t *testing.T) {
	s := newStorelessServer(t)
	pods := handlerOf(t, s, podsGVR)
	info, ok := inputSerializer(runtime.ContentTypeProtobuf, s.codecs.SupportedMediaTypes())
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	data, err := runtime.Encode(s.codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), makePod("web").obj())
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := pods.decodeObject(data, runtime.ContentTypeProtobuf, "Strict")
	if err != nil {
		t.Fatal(err)
	}
	if pod := obj.(*corev1.Pod); pod.Name != "web" || pod.Spec.Containers[0].Image != "busybox" {
		t.Errorf("decoded %+v", pod)
	}
	if _, _, err := pods.decodeObject([]byte("\x6b\x38\x73\x00garbage"), runtime.ContentTypeProtobuf, "Strict"); statusOf(t, err).Code != 400 {
		t.Errorf("garbage protobuf: %v, want 400", err)
	}
}
