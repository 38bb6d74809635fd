package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/queryparam"
	"github.com/skiff-sh/skiff/internal/storage"
)

func notAcceptable(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: err.Error(),
	}}
}

func (h *resourceHandler) get(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	choice, err := negotiateOutput(acceptsHeader(r), h.mediaTypes, false)
	if err != nil {
		h.s.writeError(w, r, notAcceptable(err))
		return
	}
	obj, err := h.st.Get(r.Context(), info.Namespace, info.Name, storage.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.writeObject(w, r, http.StatusOK, choice, obj)
}

// predicate turns the list/watch query into a storage predicate, refusing unsupported field labels
// with Kubernetes' message.
func (h *resourceHandler) predicate(q url.Values) (storage.Predicate, error) {
	p := storage.Predicate{Attrs: h.st.Attrs}
	if ls := q.Get("labelSelector"); ls != "" {
		sel, err := labels.Parse(ls)
		if err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		p.Label = sel
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		sel, err := fields.ParseSelector(fs)
		if err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		for _, req := range sel.Requirements() {
			if !h.selectable[req.Field] {
				return p, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
		p.Field = sel
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", l))
		}
		// A negative limit asks for no limit, as Kubernetes reads it.
		p.Limit = max(n, 0)
	}
	p.Continue = q.Get("continue")
	return p, nil
}

// listOptions reads a list's, watch's or deletecollection's query. Bad combinations are a 422 on
// kind ListOptions with Kubernetes' field errors, as kube-apiserver validates them.
func (h *resourceHandler) listOptions(q url.Values, recursive, watch bool) (storage.ListOptions, error) {
	pred, err := h.predicate(q)
	if err != nil {
		return storage.ListOptions{}, err
	}
	opts := storage.ListOptions{
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: q.Get("resourceVersionMatch"),
		Predicate:            pred,
		Recursive:            recursive,
		ProgressNotify:       queryparam.Bool(q, "allowWatchBookmarks"),
		SendInitialEvents:    queryparam.OptionalBool(q, "sendInitialEvents"),
	}
	if pred.Continue != "" && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return opts, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	if errs := validateListOptions(opts, watch); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return opts, nil
}

// validateListOptions applies Kubernetes' rules for resourceVersionMatch and sendInitialEvents. A
// watch may ask for its initial state as events (a WatchList request: sendInitialEvents with
// resourceVersionMatch=NotOlderThan, with or without a resourceVersion); a list may not.
func validateListOptions(opts storage.ListOptions, watch bool) field.ErrorList {
	var errs field.ErrorList
	matchPath := field.NewPath("resourceVersionMatch")
	match := metav1.ResourceVersionMatch(opts.ResourceVersionMatch)
	if watch {
		if opts.SendInitialEvents != nil && match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.Forbidden(matchPath, fmt.Sprintf("sendInitialEvents requires setting resourceVersionMatch to %s", metav1.ResourceVersionMatchNotOlderThan)))
		}
		if match != "" {
			if opts.SendInitialEvents == nil {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
			}
			if match != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.NotSupported(matchPath, match, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
			}
			if opts.Predicate.Continue != "" {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
			}
		}
		return errs
	}
	if match != "" {
		if opts.ResourceVersion == "" {
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if opts.Predicate.Continue != "" {
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
		}
		if match != metav1.ResourceVersionMatchExact && match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.NotSupported(matchPath, match, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
		}
		if match == metav1.ResourceVersionMatchExact && opts.ResourceVersion == "0" {
			errs = append(errs, field.Forbidden(matchPath, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	}
	if opts.SendInitialEvents != nil {
		errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
	}
	return errs
}

func (h *resourceHandler) list(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	choice, err := negotiateOutput(acceptsHeader(r), h.mediaTypes, true)
	if err != nil {
		h.s.writeError(w, r, notAcceptable(err))
		return
	}
	opts, err := h.listOptions(r.URL.Query(), true, false)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	// From the watch cache's shared objects and their memoized encodings when it can (liststream.go).
	if h.streamList(w, r, choice, info, opts) {
		return
	}
	list, err := h.st.List(r.Context(), info.Namespace, opts)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	// List items carry no apiVersion/kind of their own, as Kubernetes serves them.
	// Custom resources' items keep theirs, as kube-apiserver serves unstructured lists.
	if h.res.Objects == nil {
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			return nil
		})
	}
	h.writeObject(w, r, http.StatusOK, choice, list)
}

func (h *resourceHandler) watch(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	choice, err := negotiateOutput(acceptsHeader(r), h.mediaTypes, false)
	if err != nil {
		h.s.writeError(w, r, notAcceptable(err))
		return
	}
	if choice.info.StreamSerializer == nil {
		h.s.writeError(w, r, notAcceptable(fmt.Errorf("no streaming support for %s", choice.info.MediaType)))
		return
	}
	q := r.URL.Query()
	opts, err := h.listOptions(q, info.Name == "", true)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	timeout := h.s.cfg.MinRequestTimeout + time.Duration(rand.Int64N(int64(h.s.cfg.MinRequestTimeout)))
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", ts)))
			return
		}
		timeout = time.Duration(n) * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	// info.Name is set by the legacy /watch/namespaces/ns/pods/name form, which watches one object.
	wi, err := h.st.Watch(ctx, info.Namespace, info.Name, opts)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	defer wi.Stop()
	h.shareWatchObjects(wi, choice)

	mediaType := choice.info.MediaType
	if mediaType != runtime.ContentTypeJSON {
		mediaType += ";stream=watch"
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	framer := choice.info.StreamSerializer.Framer.NewFrameWriter(w)
	streamEncoder := streaming.NewEncoder(framer, choice.info.StreamSerializer.Serializer)
	first := true
	initialized := false
	for {
		if !initialized && len(wi.ResultChan()) == 0 {
			// Flow control: the events found waiting (the initial state) are written.
			initialized = true
			releaseSeats(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			raw, err := h.encodeWatchObject(choice, ev, first)
			if err != nil {
				h.s.log.Warn("encode watch event", "resource", h.res.GroupResource(), "err", err)
				return
			}
			first = false
			if err := streamEncoder.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
				return
			}
			if flusher != nil && len(wi.ResultChan()) == 0 {
				flusher.Flush()
			}
		}
	}
}

// encodeWatchObject encodes one event's object in the negotiated form.
func (h *resourceHandler) encodeWatchObject(choice mediaChoice, ev watch.Event, first bool) ([]byte, error) {
	if ev.Type == watch.Error {
		return runtime.Encode(h.s.codecs.EncoderForVersion(choice.info.Serializer, metav1.Unversioned), ev.Object)
	}
	if shared, ok := ev.Object.(*storage.SharedEventObject); ok {
		return h.encodeSharedWatchObject(choice, shared)
	}
	obj, gv, err := h.convertOutput(choice, ev.Object, nil)
	if err != nil {
		return nil, err
	}
	if t, ok := obj.(*metav1.Table); ok && !first {
		// kubectl prints headers from the first event; later events carry rows only, as upstream sends them.
		t.ColumnDefinitions = nil
	}
	return runtime.Encode(h.s.codecs.EncoderForVersion(choice.info.Serializer, gv), obj)
}
