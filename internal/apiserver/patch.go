package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
)

// maxJSONPatchOperations bounds the operations of one JSON patch, as Kubernetes does.
const maxJSONPatchOperations = 10000

// Kubernetes arms the JSON patch library's copy limit when it builds its server; without it a patch of
// a few dozen "copy" operations doubles the document each time and exhausts memory. The limit is a
// package variable of the library, so it is set once here rather than per server.
func init() { jsonpatch.AccumulatedCopySizeLimit = maxBodyBytes }

// patchTypeOf maps a PATCH Content-Type to its patch type.
func patchTypeOf(contentType string) (types.PatchType, bool) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", false
	}
	switch pt := types.PatchType(mediaType); pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
		return pt, true
	}
	return "", false
}

// applyPatch computes the patched JSON of current under a JSON, merge or strategic merge patch.
// dataStruct is a typed object whose Go struct tags drive strategic merge.
func applyPatch(pt types.PatchType, currentJSON, patch []byte, dataStruct runtime.Object) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		out, err := p.Apply(currentJSON)
		if err != nil {
			var copyErr *jsonpatch.AccumulatedCopySizeError
			if errors.As(err, &copyErr) {
				return nil, apierrors.NewRequestEntityTooLargeError(err.Error())
			}
			// A decoded JSON patch that cannot be applied (a failed test, a missing path, an
			// unknown op) is 422, as in Kubernetes; only an undecodable one is 400.
			return nil, unprocessable(err.Error())
		}
		return out, nil
	case types.MergePatchType:
		out, err := jsonpatch.MergePatch(currentJSON, patch)
		if err != nil {
			return nil, interpretPatchError(err)
		}
		return out, nil
	case types.StrategicMergePatchType:
		if dataStruct == nil {
			// Objects without Go types (custom resources): kube-apiserver's answer, word for word.
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
				Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
					types.JSONPatchType, types.MergePatchType, types.ApplyYAMLPatchType),
			}}
		}
		patchMap, err := decodePatchMap(patch)
		if err != nil {
			return nil, err
		}
		patchJSON, err := json.Marshal(patchMap)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
		}
		out, err := strategicpatch.StrategicMergePatch(currentJSON, patchJSON, dataStruct)
		if err != nil {
			return nil, interpretPatchError(err)
		}
		return out, nil
	}
	return nil, unsupportedMediaType(string(pt))
}

// decodePatchMap reads a strategic merge patch. JSON is decoded keeping integers as int64 (a YAML
// round trip would turn them into float64 and lose precision above 2^53); YAML is still accepted.
func decodePatchMap(patch []byte) (map[string]interface{}, error) {
	var m map[string]interface{}
	if err := utiljson.Unmarshal(patch, &m); err == nil {
		if m == nil {
			m = map[string]interface{}{}
		}
		return m, nil
	}
	if err := yaml.Unmarshal(patch, &m); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if m == nil {
		m = map[string]interface{}{}
	}
	return m, nil
}

// interpretPatchError classifies patch failures as Kubernetes does: a patch that cannot be applied to
// the object is 422 Invalid; a malformed one is 400.
func interpretPatchError(err error) error {
	var copyErr *jsonpatch.AccumulatedCopySizeError
	if errors.As(err, &copyErr) {
		return apierrors.NewRequestEntityTooLargeError(err.Error())
	}
	switch {
	case errors.Is(err, jsonpatch.ErrTestFailed), errors.Is(err, jsonpatch.ErrMissing), errors.Is(err, jsonpatch.ErrUnknownType),
		errors.Is(err, jsonpatch.ErrInvalidIndex), errors.Is(err, jsonpatch.ErrInvalid):
		return unprocessable(err.Error())
	}
	return apierrors.NewBadRequest(err.Error())
}

func (h *resourceHandler) patch(w http.ResponseWriter, r *http.Request, info *RequestInfo, subresource string) {
	opts, err := parseWriteOptions(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	pt, ok := patchTypeOf(r.Header.Get("Content-Type"))
	if !ok {
		h.s.writeError(w, r, unsupportedMediaType(r.Header.Get("Content-Type")))
		return
	}
	body, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if pt == types.ApplyYAMLPatchType && r.URL.Query().Get("fieldManager") == "" {
		h.s.writeError(w, r, apierrors.NewBadRequest("PATCH, fieldManager is required for apply requests"))
		return
	}
	if pt != types.ApplyYAMLPatchType && r.URL.Query().Has("force") {
		h.s.writeError(w, r, apierrors.NewBadRequest("force: Invalid value: force flag is only valid for apply requests"))
		return
	}
	uc := &updateContext{subresource: subresource, opts: opts, forceAllowCreate: pt == types.ApplyYAMLPatchType}
	var warnings []string
	if pt == types.ApplyYAMLPatchType && (opts.fieldValidation == "Strict" || opts.fieldValidation == "Warn") {
		// Duplicate keys in an apply configuration, as kube-apiserver finds them: an error under
		// Strict, a warning under Warn (the decoding below keeps the last value).
		var strict map[string]interface{}
		if err := yaml.UnmarshalStrict(body, &strict); err != nil {
			if opts.fieldValidation == "Strict" {
				h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err)))
				return
			}
			warnings = append(warnings, err.Error())
		}
	}
	out, created, err := h.st.Update(r.Context(), info.Namespace, info.Name, func(_ context.Context, current runtime.Object) (runtime.Object, error) {
		if pt == types.ApplyYAMLPatchType {
			return h.applyServerSide(current, body, info, uc)
		}
		if current == nil {
			// Only server-side apply creates through PATCH.
			return nil, apierrors.NewNotFound(h.res.GroupResource(), info.Name)
		}
		next, w, err := h.patchObject(current, pt, body, info, opts.fieldValidation)
		if err != nil {
			return nil, err
		}
		warnings = w
		return next, nil
	}, h.updateOptions(uc))
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.finishUpdate(w, r, out, warnings, created)
}

// patchObject applies a JSON, merge or strategic merge patch to current and decodes the result
// with the requested field validation.
func (h *resourceHandler) patchObject(current runtime.Object, pt types.PatchType, patch []byte, info *RequestInfo, fieldValidation string) (runtime.Object, []string, error) {
	currentJSON, err := runtime.Encode(h.s.codecs.LegacyCodec(h.res.GroupVersion), current)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s for patching: %w", info.Name, err)
	}
	var dataStruct runtime.Object
	if h.res.Objects == nil || h.res.Objects.StrategicMergePatch {
		dataStruct = h.res.New()
	}
	patchedJSON, err := applyPatch(pt, currentJSON, patch, dataStruct)
	if err != nil {
		return nil, nil, err
	}
	next, warnings, err := h.decodeObject(patchedJSON, "application/json", fieldValidation)
	if err != nil {
		return nil, nil, err
	}
	cm, _ := meta.Accessor(current)
	nm, err := meta.Accessor(next)
	if err != nil {
		return nil, nil, err
	}
	if nm.GetName() != info.Name {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", nm.GetName(), info.Name))
	}
	if h.res.Namespaced && nm.GetNamespace() != cm.GetNamespace() {
		return nil, nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	// The patched resourceVersion (the stored one unless the patch set it) is the precondition.
	if err := store.CheckResourceVersion(h.res.GroupResource(), info.Name, nm.GetResourceVersion(), cm.GetResourceVersion()); err != nil {
		return nil, nil, err
	}
	return next, warnings, nil
}

// applyServerSide merges an apply configuration into current (nil: the object does not exist yet)
// with the structured-merge field manager, which records ownership and reports conflicts.
func (h *resourceHandler) applyServerSide(current runtime.Object, body []byte, info *RequestInfo, uc *updateContext) (runtime.Object, error) {
	patchObj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(body, &patchObj.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if patchObj.Object == nil {
		return nil, apierrors.NewBadRequest("error decoding YAML: empty apply configuration")
	}
	gvk := patchObj.GroupVersionKind()
	if gvk.GroupVersion() != h.res.GroupVersion || gvk.Kind != h.res.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), h.res.GroupVersion))
	}
	if patchObj.GetName() != info.Name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", patchObj.GetName(), info.Name))
	}
	if h.res.Namespaced {
		if ns := patchObj.GetNamespace(); ns != "" && ns != info.Namespace {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		patchObj.SetNamespace(info.Namespace)
	}
	fm := h.fieldManagerFor(uc.subresource)
	live := current
	if live == nil {
		live = h.res.New()
	}
	merged, err := fm.Apply(live, patchObj, uc.opts.fieldManager, uc.opts.force)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, err
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	uc.skipManagedFields = true
	return merged, nil
}
