package apiserver

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// A list served from the watch cache is written item by item from each object version's memoized
// encoding (storage.SharedObject): no copy of the objects, no list object, no per-request encoding
// of items another response already encoded. The bytes are the same as the list encoder's: the
// envelope is the encoder's own output for the list without items, and the items are spliced in
// where it has none.

// streamBufferSize is the write buffer between the items and the connection.
const streamBufferSize = 64 << 10

// streamedListForm is how a list can be streamed: json or protobuf items in a typed list.
type streamedListForm int

const (
	notStreamed streamedListForm = iota
	streamJSON
	streamProtobuf
)

// streamedForm decides whether the list response can be streamed from shared objects: a typed
// resource served in its stored version (no conversion), as the object itself (no Table or
// metadata view), in JSON or protobuf.
func (h *resourceHandler) streamedForm(choice mediaChoice) streamedListForm {
	if h.res.Objects != nil || choice.kind != outputObject {
		return notStreamed
	}
	form := notStreamed
	switch choice.info.MediaType {
	case runtime.ContentTypeJSON:
		form = streamJSON
	case runtime.ContentTypeProtobuf:
		form = streamProtobuf
		if !protobufItemsAreField2(h.res.NewList()) {
			return notStreamed
		}
		if _, ok := h.res.New().(interface{ Marshal() ([]byte, error) }); !ok {
			return notStreamed
		}
	default:
		return notStreamed
	}
	gvks, _, err := h.s.cfg.Scheme.ObjectKinds(h.res.New())
	if err != nil {
		return notStreamed
	}
	for _, gvk := range gvks {
		if gvk.GroupVersion() == h.res.GroupVersion {
			return form
		}
	}
	return notStreamed
}

// protobufItemsAreField2 checks the list type's Items field is protobuf field 2, as in every
// generated Kubernetes list (metadata is 1).
func protobufItemsAreField2(list runtime.Object) bool {
	t := reflect.TypeOf(list)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	f, ok := t.Elem().FieldByName("Items")
	return ok && strings.HasPrefix(f.Tag.Get("protobuf"), "bytes,2,rep,")
}

// streamList answers a list from the storage's shared objects when it can; false when the caller
// must answer it the ordinary way (nothing has been written then).
func (h *resourceHandler) streamList(w http.ResponseWriter, r *http.Request, choice mediaChoice, info *RequestInfo, opts storage.ListOptions) bool {
	form := h.streamedForm(choice)
	if form == notStreamed {
		return false
	}
	list, served, err := h.st.ListShared(r.Context(), info.Namespace, opts)
	if err != nil {
		h.s.writeError(w, r, err)
		return true
	}
	if !served {
		return false
	}
	body, err := h.sharedListBody(choice, form, list)
	if err != nil {
		// Nothing is written yet: the ordinary path answers (and reports its own errors).
		h.s.log.Debug("stream list", "resource", h.res.GroupResource(), "err", err)
		return false
	}
	w.Header().Set("Content-Type", choice.info.MediaType)
	w.Header().Set("Content-Length", strconv.FormatInt(body.size(), 10))
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, streamBufferSize)
	err = body.writeTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		h.s.log.Debug("write list", "path", r.URL.Path, "err", err)
	}
	return true
}

// listBody is a list response as pieces: head, items (each with its prefix), tail.
type listBody struct {
	head     []byte
	items    [][]byte
	prefixes [][]byte // per item; nil entries write nothing
	tail     []byte
}

func (b *listBody) size() int64 {
	n := int64(len(b.head) + len(b.tail))
	for i, item := range b.items {
		n += int64(len(b.prefixes[i]) + len(item))
	}
	return n
}

func (b *listBody) writeTo(w io.Writer) error {
	if _, err := w.Write(b.head); err != nil {
		return err
	}
	for i, item := range b.items {
		if len(b.prefixes[i]) > 0 {
			if _, err := w.Write(b.prefixes[i]); err != nil {
				return err
			}
		}
		if _, err := w.Write(item); err != nil {
			return err
		}
	}
	_, err := w.Write(b.tail)
	return err
}

// sharedListBody encodes the envelope once and takes every item's memoized encoding.
func (h *resourceHandler) sharedListBody(choice mediaChoice, form streamedListForm, list *storage.SharedList) (*listBody, error) {
	envelope, err := h.encodeEnvelope(choice, list)
	if err != nil {
		return nil, err
	}
	body := &listBody{items: make([][]byte, len(list.Items)), prefixes: make([][]byte, len(list.Items))}
	gv := h.res.GroupVersion
	switch form {
	case streamJSON:
		id := "json-item:" + gv.String()
		encode := func(obj runtime.Object, w io.Writer) error {
			// List items carry no apiVersion/kind of their own; the shared object keeps its own.
			item, err := withoutTypeMeta(obj)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := choice.info.Serializer.Encode(item, &buf); err != nil {
				return err
			}
			_, err = w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			return err
		}
		// The encoder ends a list without items with `"items":[]}` and a newline.
		cut := bytes.LastIndex(envelope, []byte(`"items":[]}`))
		if cut < 0 {
			return nil, errors.New("list envelope has no empty items array")
		}
		body.head = envelope[:cut+len(`"items":[`)]
		body.tail = envelope[cut+len(`"items":[`):]
		comma := []byte{','}
		for i, item := range list.Items {
			data, err := item.Encoded(id, encode)
			if err != nil {
				return nil, err
			}
			body.items[i] = data
			if i > 0 {
				body.prefixes[i] = comma
			}
		}
	case streamProtobuf:
		encode := func(obj runtime.Object, w io.Writer) error {
			m, ok := obj.(interface{ Marshal() ([]byte, error) })
			if !ok {
				return fmt.Errorf("%T has no protobuf form", obj)
			}
			data, err := m.Marshal()
			if err != nil {
				return err
			}
			_, err = w.Write(data)
			return err
		}
		var rawItems int
		for i, item := range list.Items {
			data, err := item.Encoded("protobuf-item", encode)
			if err != nil {
				return nil, err
			}
			body.items[i] = data
			// Each item is field 2 of the list message: tag, length, bytes.
			body.prefixes[i] = binary.AppendUvarint([]byte{0x12}, uint64(len(data)))
			rawItems += len(body.prefixes[i]) + len(data)
		}
		if err := splitProtobufEnvelope(envelope, rawItems, body); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// encodeEnvelope encodes the list with its metadata and no items, as the list encoder would.
func (h *resourceHandler) encodeEnvelope(choice mediaChoice, list *storage.SharedList) ([]byte, error) {
	obj := h.res.NewList()
	if err := meta.SetList(obj, []runtime.Object{}); err != nil {
		return nil, err
	}
	accessor, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(list.ResourceVersion)
	accessor.SetContinue(list.Continue)
	accessor.SetRemainingItemCount(list.RemainingItemCount)
	var buf bytes.Buffer
	if err := h.s.codecs.EncoderForVersion(choice.info.Serializer, h.res.GroupVersion).Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// splitProtobufEnvelope lays out a protobuf list response: the magic, then runtime.Unknown's fields
// in order (1 typeMeta, 2 raw = the list message, 3 contentEncoding, 4 contentType), where raw is the
// envelope's list message (metadata only) followed by rawItems bytes of items.
func splitProtobufEnvelope(envelope []byte, rawItems int, body *listBody) error {
	if !bytes.HasPrefix(envelope, protobufMagic) {
		return errors.New("protobuf envelope without the magic prefix")
	}
	var u runtime.Unknown
	if err := u.Unmarshal(envelope[len(protobufMagic):]); err != nil {
		return fmt.Errorf("protobuf envelope: %w", err)
	}
	typeMeta, err := u.TypeMeta.Marshal()
	if err != nil {
		return err
	}
	head := append([]byte(nil), protobufMagic...)
	head = binary.AppendUvarint(append(head, 0x0a), uint64(len(typeMeta)))
	head = append(head, typeMeta...)
	head = binary.AppendUvarint(append(head, 0x12), uint64(len(u.Raw)+rawItems))
	head = append(head, u.Raw...)
	tail := binary.AppendUvarint([]byte{0x1a}, uint64(len(u.ContentEncoding)))
	tail = append(tail, u.ContentEncoding...)
	tail = binary.AppendUvarint(append(tail, 0x22), uint64(len(u.ContentType)))
	tail = append(tail, u.ContentType...)
	body.head, body.tail = head, tail
	return nil
}

// withoutTypeMeta is a shallow copy of obj with empty type metadata (obj is shared and stays as is).
func withoutTypeMeta(obj runtime.Object) (runtime.Object, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%T is not a pointer to a struct", obj)
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	out, ok := cp.Interface().(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

// shareWatchObjects lets a watch served from the watch cache send the cache's objects, each encoded
// once per wire form for every watcher, when the response form allows it (as for streamed lists).
func (h *resourceHandler) shareWatchObjects(wi watch.Interface, choice mediaChoice) {
	if sharer, ok := wi.(storage.ObjectSharer); ok && h.streamedForm(choice) != notStreamed {
		sharer.ShareObjects()
	}
}

// encodeSharedWatchObject is a watch event's object, with its type metadata, from the memo.
func (h *resourceHandler) encodeSharedWatchObject(choice mediaChoice, shared *storage.SharedEventObject) ([]byte, error) {
	gv := h.res.GroupVersion
	id := "watch:" + choice.info.MediaType + ":" + gv.String()
	return shared.Encoded(id, func(obj runtime.Object, w io.Writer) error {
		// The encoder sets type metadata: on a shallow copy, never on the shared object.
		cp, err := withoutTypeMeta(obj)
		if err != nil {
			return err
		}
		return h.s.codecs.EncoderForVersion(choice.info.Serializer, gv).Encode(cp, w)
	})
}
