package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/skiff-sh/skiff/internal/apiserver/audit"
)

// auditBodyLimit bounds how much of a request or response body an event carries; a larger body is
// left out of the event rather than held in memory.
const auditBodyLimit = 1 << 20

// auditRecord follows one request through the audit log: it writes RequestReceived when the
// request is known, ResponseStarted when a long-running response begins, and ResponseComplete
// (or Panic) when it ends.
type auditRecord struct {
	auditor  *audit.Auditor
	decision audit.Decision
	event    audit.Event
	// request and response capture bodies at the Request and RequestResponse levels (and the
	// response of a failure, for its Status); nil when not wanted.
	request  *limitedBuffer
	response *limitedBuffer
	writer   *auditWriter
	// toJSON turns a protobuf body into JSON, as events carry objects.
	toJSON func([]byte) []byte
}

// auditBegin decides whether the request is audited and, if so, records RequestReceived and
// returns the record with the request and response writer that feed it. authUser is who
// authenticated.
func (s *Server) auditBegin(w http.ResponseWriter, r *http.Request, info *RequestInfo, authUser *UserInfo) (*auditRecord, http.ResponseWriter, *http.Request) {
	a := s.cfg.Auditor
	if a == nil {
		return nil, w, r
	}
	decision := a.Policy.Decide(audit.Attributes{
		User: authUser.Name, Groups: authUser.Groups, Verb: info.Verb, ResourceRequest: info.IsResourceRequest,
		APIGroup: info.APIGroup, Resource: info.Resource, Subresource: info.Subresource,
		Namespace: info.Namespace, Name: info.Name, Path: info.Path,
	})
	if decision.Level == audit.LevelNone {
		return nil, w, r
	}
	id := types.UID(r.Header.Get("Audit-ID"))
	if id == "" {
		id = uuid.NewUUID()
	}
	w.Header().Set("Audit-ID", string(id))
	now := metav1.NewMicroTime(a.Clock.Now())
	rec := &auditRecord{auditor: a, decision: decision, toJSON: s.protobufToJSON, event: audit.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
		Level:    decision.Level, AuditID: id, RequestURI: r.URL.RequestURI(), Verb: info.Verb,
		User: auditUser(authUser), SourceIPs: sourceIPs(r), UserAgent: r.UserAgent(),
		RequestReceivedTimestamp: now, StageTimestamp: now,
	}}
	if info.IsResourceRequest {
		rec.event.ObjectRef = &audit.ObjectReference{
			Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
			APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource,
		}
	}
	rec.emit(audit.StageRequestReceived)
	if !decision.Level.Less(audit.LevelRequest) && r.Body != nil && r.Body != http.NoBody {
		rec.request = &limitedBuffer{limit: auditBodyLimit}
		r.Body = teeBody{ReadCloser: r.Body, buf: rec.request}
	}
	rec.response = &limitedBuffer{limit: auditBodyLimit}
	rec.writer = &auditWriter{wrappedWriter: wrappedWriter{w}, record: rec, longRunning: longRunning(info)}
	return rec, rec.writer, r
}

// impersonating records who the request acts as, when that is not who authenticated.
func (rec *auditRecord) impersonating(user *UserInfo) {
	if rec == nil || user.Name == rec.event.User.Username && slices.Equal(user.Groups, rec.event.User.Groups) {
		return
	}
	impersonated := auditUser(user)
	rec.event.ImpersonatedUser = &impersonated
}

// authorized records the authorizer's decision as kube-apiserver's annotations.
func (rec *auditRecord) authorized(allowed bool, reason string) {
	decision := "forbid"
	if allowed {
		decision = "allow"
	}
	rec.annotate("authorization.k8s.io/decision", decision)
	if reason != "" {
		rec.annotate("authorization.k8s.io/reason", reason)
	}
}

// annotate records an annotation (the authorizer's decision, as kube-apiserver adds it).
func (rec *auditRecord) annotate(key, value string) {
	if rec == nil {
		return
	}
	if rec.event.Annotations == nil {
		rec.event.Annotations = map[string]string{}
	}
	rec.event.Annotations[key] = value
}

// finish records ResponseComplete, or Panic when the request panicked.
func (rec *auditRecord) finish(panicked bool) {
	if rec == nil {
		return
	}
	code := rec.writer.status
	if code == 0 {
		code = http.StatusOK
	}
	status := &metav1.Status{Code: int32(code)}
	body := rec.response.bytes()
	if bytes.HasPrefix(body, protobufMagic) {
		body = rec.toJSON(body)
	}
	if code >= 300 {
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
			status = &metav1.Status{Status: st.Status, Code: int32(code), Reason: st.Reason, Message: st.Message}
		}
	} else {
		status.Status = metav1.StatusSuccess
	}
	rec.event.ResponseStatus = status
	if rec.request != nil {
		rec.event.RequestObject = rec.object(rec.request.bytes())
	}
	if rec.decision.Level == audit.LevelRequestResponse && !rec.writer.longRunning {
		rec.event.ResponseObject = rec.object(body)
	}
	stage := audit.StageResponseComplete
	if panicked {
		stage = audit.StagePanic
		rec.event.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Message: "APIServer panic'd"}
	}
	rec.emit(stage)
}

// object is a captured body as an event carries it: JSON only (a protobuf body is left out), cut
// bodies left out, managed fields dropped when the policy says so.
func (rec *auditRecord) object(body []byte) json.RawMessage {
	if bytes.HasPrefix(body, protobufMagic) {
		body = rec.toJSON(body)
	}
	if len(body) == 0 || !json.Valid(body) {
		return nil
	}
	if !rec.decision.OmitManagedFields {
		return body
	}
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return body
	}
	dropManagedFields(obj)
	if items, ok := obj["items"].([]any); ok {
		for _, item := range items {
			if m, ok := item.(map[string]any); ok {
				dropManagedFields(m)
			}
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

func dropManagedFields(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
}

// emit writes the event at stage unless the policy omits that stage.
func (rec *auditRecord) emit(stage audit.Stage) {
	if slices.Contains(rec.decision.OmitStages, stage) {
		return
	}
	ev := rec.event
	ev.Stage = stage
	ev.StageTimestamp = metav1.NewMicroTime(rec.auditor.Clock.Now())
	if stage == audit.StageRequestReceived || stage == audit.StageResponseStarted {
		ev.RequestObject, ev.ResponseObject = nil, nil
	}
	rec.auditor.Writer.Write(&ev)
}

func auditUser(u *UserInfo) audit.UserInfo {
	return audit.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// sourceIPs are the X-Forwarded-For addresses, then the peer's, as kube-apiserver lists them.
func sourceIPs(r *http.Request) []string {
	var ips []string
	for _, part := range strings.Split(r.Header.Get("X-Forwarded-For"), ",") {
		if ip := net.ParseIP(strings.TrimSpace(part)); ip != nil {
			ips = append(ips, ip.String())
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && !slices.Contains(ips, host) {
		ips = append(ips, host)
	}
	return ips
}

// auditWriter notes the response's status, captures its body and records ResponseStarted for
// long-running responses.
type auditWriter struct {
	wrappedWriter
	record      *auditRecord
	longRunning bool
	status      int
}

func (w *auditWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if w.longRunning {
			w.record.emit(audit.StageResponseStarted)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.longRunning {
		w.record.response.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// limitedBuffer keeps up to limit bytes; past it, it keeps nothing (a cut body is not an object).
// It is locked: a handler cut off by the request timeout may still be reading its body while the
// record is finished.
type limitedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return
	}
	if b.buf.Len()+len(p) > b.limit {
		b.over = true
		b.buf.Reset()
		return
	}
	b.buf.Write(p)
}

func (b *limitedBuffer) bytes() []byte {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return nil
	}
	return bytes.Clone(b.buf.Bytes())
}

// teeBody copies what the handler reads of a request body into buf.
type teeBody struct {
	io.ReadCloser
	buf *limitedBuffer
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		t.buf.Write(p[:n])
	}
	return n, err
}

// protobufMagic starts every Kubernetes protobuf-encoded object.
var protobufMagic = []byte("k8s\x00")

// protobufToJSON decodes a protobuf object of a known type and encodes it as JSON; nil when it
// cannot.
func (s *Server) protobufToJSON(body []byte) []byte {
	obj, _, err := s.codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return out
}
