package apiserver

//lint:file-ignore SA1019 DeleteOptions.orphanDependents is deprecated but still accepted from clients, as Kubernetes accepts it.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"sigs.k8s.io/yaml"

	"github.com/skiff-sh/skiff/internal/queryparam"
)

// writeOptions are the query parameters every write accepts.
type writeOptions struct {
	dryRun          bool
	fieldManager    string
	fieldValidation string // Strict, Warn or Ignore
	force           bool
}

func parseWriteOptions(r *http.Request) (writeOptions, error) {
	q := r.URL.Query()
	var opts writeOptions
	for _, v := range q["dryRun"] {
		if v != metav1.DryRunAll {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("Invalid dryRun value: %q; supported values: \"All\"", v))
		}
		opts.dryRun = true
	}
	opts.fieldManager = q.Get("fieldManager")
	if len(opts.fieldManager) > 128 {
		return opts, apierrors.NewBadRequest("fieldManager: Too long: may not be more than 128 bytes")
	}
	for _, c := range opts.fieldManager {
		if !unicode.IsPrint(c) {
			return opts, apierrors.NewBadRequest("fieldManager: Invalid value: invalid characters")
		}
	}
	if opts.fieldManager == "" {
		opts.fieldManager = managerFromUserAgent(r.UserAgent())
	}
	switch v := q.Get("fieldValidation"); v {
	case "", "Warn":
		opts.fieldValidation = "Warn"
	case "Strict", "Ignore":
		opts.fieldValidation = v
	default:
		return opts, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation: Unsupported value: %q: supported values: \"Ignore\", \"Strict\", \"Warn\"", v))
	}
	opts.force = queryparam.Bool(q, "force")
	return opts, nil
}

// managerFromUserAgent names the field manager of a request that gave none: the user agent up to
// its first "/", as Kubernetes does.
func managerFromUserAgent(ua string) string {
	name, _, _ := strings.Cut(ua, "/")
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// readBody reads a request's body, at most maxBodyBytes of it. A body that declares more is
// refused before a byte of it is read (413, as kube-apiserver answers), and its connection is
// closed rather than drained (body.go).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	if len(body) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return body, nil
}

// decodeObject decodes body (in contentType) into a new object of the resource, applying defaults,
// with the strictness fieldValidation asks for. Unknown or duplicate fields are an error under Strict
// and a warning under Warn.
func (h *resourceHandler) decodeObject(body []byte, contentType string, fieldValidation string) (runtime.Object, []string, error) {
	gvk := h.res.GroupVersionKind()
	info, ok := inputSerializer(contentType, h.mediaTypes)
	if !ok {
		return nil, nil, unsupportedMediaType(contentType)
	}
	var warnings []string
	if o := h.res.Objects; o != nil && o.UnknownFields != nil && fieldValidation != "Ignore" {
		// Unknown fields of objects built from a schema are pruned while decoding; they are
		// found first, on the raw body, and reported as kube-apiserver reports them.
		unknown, actual := h.unknownFields(body)
		if len(unknown) > 0 && fieldValidation == "Strict" {
			errs := make([]error, 0, len(unknown))
			for _, f := range unknown {
				errs = append(errs, fmt.Errorf("unknown field %q", f))
			}
			return nil, nil, h.decodeError(runtime.NewStrictDecodingError(errs), actual)
		}
		for _, f := range unknown {
			warnings = append(warnings, fmt.Sprintf("unknown field %q", f))
		}
	}
	if fieldValidation != "Ignore" {
		strictInfo, ok := inputSerializer(contentType, h.strict.SupportedMediaTypes())
		if ok && strictInfo.StrictSerializer != nil {
			dec := h.strict.DecoderToVersion(strictInfo.StrictSerializer, h.res.GroupVersion)
			obj, actual, err := dec.Decode(body, &gvk, h.res.New())
			if err == nil {
				if err := h.checkKind(actual); err != nil {
					return nil, nil, err
				}
				return obj, warnings, nil
			}
			if !runtime.IsStrictDecodingError(err) {
				return nil, nil, h.decodeError(err, actual)
			}
			if fieldValidation == "Strict" {
				return nil, nil, h.decodeError(err, actual)
			}
			if strictErr, ok := runtime.AsStrictDecodingError(err); ok {
				for _, e := range strictErr.Errors() {
					warnings = append(warnings, e.Error())
				}
			}
		}
	}
	dec := h.codecs.DecoderToVersion(info.Serializer, h.res.GroupVersion)
	obj, actual, err := dec.Decode(body, &gvk, h.res.New())
	if err != nil {
		return nil, nil, h.decodeError(err, actual)
	}
	if err := h.checkKind(actual); err != nil {
		return nil, nil, err
	}
	return obj, warnings, nil
}

// unknownFields lists the fields of body the resource's schema does not declare.
func (h *resourceHandler) unknownFields(body []byte) ([]string, *schema.GroupVersionKind) {
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, nil
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, nil
	}
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	return h.res.Objects.UnknownFields(obj), &gvk
}

// decodeError words a decoding failure as Kubernetes does: "<kind in the data> in version
// <version in the data> cannot be handled as a <resource kind>".
func (h *resourceHandler) decodeError(err error, actual *schema.GroupVersionKind) error {
	gvk := h.res.GroupVersionKind()
	data := gvk
	if actual != nil && actual.Kind != "" {
		data = *actual
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", data.Kind, data.Version, gvk.Kind, err))
}

// checkKind refuses a body whose apiVersion or kind is not the resource's, with Kubernetes' wording.
func (h *resourceHandler) checkKind(actual *schema.GroupVersionKind) error {
	if actual == nil {
		return nil
	}
	if actual.GroupVersion() != h.res.GroupVersion {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion(), h.res.GroupVersion))
	}
	if actual.Kind != h.res.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", actual.Kind, h.res.Kind))
	}
	return nil
}

func warningHeader(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
	}
}

func parseDeleteOptions(r *http.Request, body []byte, h *resourceHandler) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if len(strings.TrimSpace(string(body))) > 0 {
		decoded, err := runtime.Decode(h.s.codecs.UniversalDeserializer(), body)
		if d, ok := decoded.(*metav1.DeleteOptions); err == nil && ok {
			opts = d
		} else if jerr := json.Unmarshal(body, opts); jerr != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid delete options: %v", jerr))
		}
	}
	q := r.URL.Query()
	if err := queryDeleteOptions(q, opts); err != nil {
		return nil, err
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy: Unsupported value: %q: supported values: \"Foreground\", \"Background\", \"Orphan\"", *p))
		}
		if opts.OrphanDependents != nil {
			return nil, apierrors.NewBadRequest("propagationPolicy: Invalid value: \"" + string(*p) + "\": orphanDependents and deletionPropagation cannot be both set")
		}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	for _, v := range opts.DryRun {
		if v != metav1.DryRunAll {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Invalid dryRun value: %q; supported values: \"All\"", v))
		}
	}
	return opts, nil
}

func queryDeleteOptions(q url.Values, opts *metav1.DeleteOptions) error {
	if g := q.Get("gracePeriodSeconds"); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", g))
		}
		opts.GracePeriodSeconds = &n
	}
	if p := q.Get("propagationPolicy"); p != "" {
		pp := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &pp
	}
	// Only when given: client-go sends orphanDependents in the body (upstream's "Deployment
	// ReplicaSet orphaning and adoption" deletes so), which an absent parameter must not erase.
	if o := queryparam.OptionalBool(q, "orphanDependents"); o != nil {
		opts.OrphanDependents = o
	}
	if d := q["dryRun"]; len(d) > 0 {
		opts.DryRun = d
	}
	return nil
}

func unsupportedMediaType(contentType string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got %q)", contentType),
	}}
}

func unprocessable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: msg,
	}}
}

// readWrite reads what every write request starts with, its options and its body, answering the
// client itself when either is bad.
func (h *resourceHandler) readWrite(w http.ResponseWriter, r *http.Request) (writeOptions, []byte, bool) {
	opts, err := parseWriteOptions(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return opts, nil, false
	}
	body, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return opts, nil, false
	}
	return opts, body, true
}
