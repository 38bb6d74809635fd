package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func TestPatchTypeOf(t *testing.T) {
	for contentType, want := range map[string]types.PatchType{
		"application/json-patch+json":                  types.JSONPatchType,
		"application/merge-patch+json":                 types.MergePatchType,
		"application/strategic-merge-patch+json":       types.StrategicMergePatchType,
		"application/apply-patch+yaml":                 types.ApplyYAMLPatchType,
		"application/merge-patch+json; charset=utf-8":  types.MergePatchType,
		"application/json":                             "",
		"application/apply-patch+cbor":                 "",
		"":                                             "",
		"application/strategic-merge-patch+json;;bad=": "",
	} {
		got, ok := patchTypeOf(contentType)
		if got != want || ok != (want != "") {
			t.Errorf("patchTypeOf(%q) = %q, %v; want %q", contentType, got, ok, want)
		}
	}
}

// podJSON is the current object the patch tests start from.
func podJSON(t *testing.T) []byte {
	t.Helper()
	pod := makePod("web").label("app", "web").container("sidecar", "envoy").obj()
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		// check inspects the patched pod; wantCode is the error's HTTP code instead.
		check    func(t *testing.T, pod *corev1.Pod)
		wantCode int32
	}{
		{
			name: "json patch add label", pt: types.JSONPatchType,
			patch: `[{"op":"add","path":"/metadata/labels/tier","value":"front"}]`,
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Labels["tier"] != "front" || pod.Labels["app"] != "web" {
					t.Errorf("labels = %v", pod.Labels)
				}
			},
		},
		{
			name: "json patch test and replace", pt: types.JSONPatchType,
			patch: `[{"op":"test","path":"/spec/containers/0/image","value":"busybox"},{"op":"replace","path":"/spec/containers/0/image","value":"nginx"}]`,
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Spec.Containers[0].Image != "nginx" {
					t.Errorf("image = %q", pod.Spec.Containers[0].Image)
				}
			},
		},
		{name: "json patch failed test", pt: types.JSONPatchType, patch: `[{"op":"test","path":"/metadata/name","value":"other"}]`, wantCode: 422},
		{name: "json patch missing path", pt: types.JSONPatchType, patch: `[{"op":"remove","path":"/metadata/annotations/x"}]`, wantCode: 422},
		{name: "json patch bad index", pt: types.JSONPatchType, patch: `[{"op":"replace","path":"/spec/containers/9/image","value":"x"}]`, wantCode: 422},
		{name: "json patch unknown op", pt: types.JSONPatchType, patch: `[{"op":"frobnicate","path":"/metadata/name","value":"x"}]`, wantCode: 422},
		{name: "json patch not a list", pt: types.JSONPatchType, patch: `{"op":"add"}`, wantCode: 400},
		{name: "json patch not JSON", pt: types.JSONPatchType, patch: `[{`, wantCode: 400},
		{
			name: "merge patch replaces lists", pt: types.MergePatchType,
			patch: `{"metadata":{"labels":{"app":null,"tier":"front"}},"spec":{"containers":[{"name":"only","image":"nginx"}]}}`,
			check: func(t *testing.T, pod *corev1.Pod) {
				if _, ok := pod.Labels["app"]; ok || pod.Labels["tier"] != "front" {
					t.Errorf("labels = %v", pod.Labels)
				}
				if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "only" {
					t.Errorf("containers = %+v", pod.Spec.Containers)
				}
			},
		},
		{name: "merge patch not JSON", pt: types.MergePatchType, patch: `{"metadata":`, wantCode: 400},
		{
			name: "strategic patch merges containers by name", pt: types.StrategicMergePatchType,
			patch: `{"spec":{"containers":[{"name":"sidecar","image":"envoy:2"}]}}`,
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[0].Image != "busybox" || pod.Spec.Containers[1].Image != "envoy:2" {
					t.Errorf("containers = %+v", pod.Spec.Containers)
				}
			},
		},
		{
			name: "strategic patch delete directive", pt: types.StrategicMergePatchType,
			patch: `{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}`,
			check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "app" {
					t.Errorf("containers = %+v", pod.Spec.Containers)
				}
			},
		},
		{
			name: "strategic patch keeps 64-bit integers exact", pt: types.StrategicMergePatchType,
			patch: `{"spec":{"activeDeadlineSeconds":9007199254740993}}`,
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds != 9007199254740993 {
					t.Errorf("activeDeadlineSeconds = %s, want 9007199254740993", jsonOf(pod.Spec.ActiveDeadlineSeconds))
				}
			},
		},
		{name: "strategic patch bad directive", pt: types.StrategicMergePatchType, patch: `{"spec":{"containers":[{"name":"app","$patch":"frobnicate"}]}}`, wantCode: 400},
		{name: "strategic patch not JSON", pt: types.StrategicMergePatchType, patch: `{"spec":`, wantCode: 400},
		{name: "strategic patch a list", pt: types.StrategicMergePatchType, patch: `[1,2]`, wantCode: 400},
		{name: "apply is not a patch here", pt: types.ApplyYAMLPatchType, patch: `{}`, wantCode: 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := applyPatch(tt.pt, podJSON(t), []byte(tt.patch), &corev1.Pod{})
			if tt.wantCode != 0 {
				if st := statusOf(t, err); st.Code != tt.wantCode {
					t.Errorf("error = %d %s %q, want %d", st.Code, st.Reason, st.Message, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{}
			if err := json.Unmarshal(out, pod); err != nil {
				t.Fatalf("patched document %s: %v", out, err)
			}
			tt.check(t, pod)
		})
	}
}

// TestApplyJSONPatchBoundsCopies checks that a JSON patch whose "copy" operations double the document
// again and again is refused instead of growing it past the request size limit.
func TestApplyJSONPatchBoundsCopies(t *testing.T) {
	var ops []string
	ops = append(ops, `{"op":"add","path":"/metadata/annotations","value":{"a":"`+strings.Repeat("x", 1024)+`"}}`)
	for i := range 40 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations","path":"/metadata/annotations/c%d"}`, i))
	}
	_, err := applyPatch(types.JSONPatchType, podJSON(t), []byte("["+strings.Join(ops, ",")+"]"), &corev1.Pod{})
	st := statusOf(t, err)
	if st.Code != http.StatusRequestEntityTooLarge || !strings.Contains(st.Message, "accumulated size increase of copy") {
		t.Errorf("error = %d %q, want 413 about the accumulated copy size", st.Code, st.Message)
	}
}

func TestApplyJSONPatchLimitsOperations(t *testing.T) {
	ops := make([]string, 10001)
	for i := range ops {
		ops[i] = `{"op":"test","path":"/metadata/name","value":"web"}`
	}
	_, err := applyPatch(types.JSONPatchType, podJSON(t), []byte("["+strings.Join(ops, ",")+"]"), &corev1.Pod{})
	st := statusOf(t, err)
	if st.Code != http.StatusRequestEntityTooLarge || !strings.Contains(st.Message, "The allowed maximum operations in a JSON patch is 10000, got 10001") {
		t.Errorf("error = %d %q", st.Code, st.Message)
	}
}

// TestPatchObject runs a patch through the handler's decode path: the patched JSON is decoded with
// the requested field validation and must keep the object's identity.
func TestPatchObject(t *testing.T) {
	s := newStorelessServer(t)
	pods := handlerOf(t, s, podsGVR)
	current := makePod("web").obj()
	current.ResourceVersion = "7"
	info := &RequestInfo{Namespace: "default", Name: "web", Resource: "pods"}
	tests := []struct {
		name            string
		pt              types.PatchType
		patch           string
		fieldValidation string
		wantCode        int32
		wantWarning     string
	}{
		{name: "label", pt: types.MergePatchType, patch: `{"metadata":{"labels":{"a":"b"}}}`, fieldValidation: "Strict"},
		{name: "unknown field, Strict", pt: types.MergePatchType, patch: `{"spec":{"bogus":true}}`, fieldValidation: "Strict", wantCode: 400},
		{name: "unknown field, Warn", pt: types.MergePatchType, patch: `{"spec":{"bogus":true}}`, fieldValidation: "Warn", wantWarning: `unknown field "spec.bogus"`},
		{name: "rename", pt: types.MergePatchType, patch: `{"metadata":{"name":"other"}}`, fieldValidation: "Strict", wantCode: 400},
		{name: "move namespace", pt: types.JSONPatchType, patch: `[{"op":"replace","path":"/metadata/namespace","value":"other"}]`, fieldValidation: "Strict", wantCode: 400},
		{name: "stale resourceVersion", pt: types.MergePatchType, patch: `{"metadata":{"resourceVersion":"6"}}`, fieldValidation: "Strict", wantCode: 409},
		{name: "current resourceVersion", pt: types.MergePatchType, patch: `{"metadata":{"resourceVersion":"7","labels":{"a":"b"}}}`, fieldValidation: "Strict"},
		{name: "wrong type", pt: types.MergePatchType, patch: `{"spec":{"containers":"x"}}`, fieldValidation: "Ignore", wantCode: 400},
		{name: "change kind", pt: types.MergePatchType, patch: `{"kind":"Service"}`, fieldValidation: "Strict", wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, warnings, err := pods.patchObject(current.DeepCopy(), tt.pt, []byte(tt.patch), info, tt.fieldValidation)
			if tt.wantCode != 0 {
				if st := statusOf(t, err); st.Code != tt.wantCode {
					t.Errorf("error = %d %q, want %d", st.Code, st.Message, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := next.(*corev1.Pod); !ok {
				t.Fatalf("patched object is %T", next)
			}
			if tt.wantWarning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tt.wantWarning)) {
				t.Errorf("warnings = %q, want %q", warnings, tt.wantWarning)
			}
		})
	}
}

var _ runtime.Object = &corev1.Pod{}
