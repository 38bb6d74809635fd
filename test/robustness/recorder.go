package robustness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Label marks the suite's objects: watches, LISTs and informers select on it, so the ConfigMap
// the root-CA publisher puts in every namespace is not part of the history.
const (
	Label      = "robustness.skiff.sh/object"
	valueField = "v"
)

// Log is the History being recorded, shared by every client of a run.
type Log struct {
	clock clock.PassiveClock
	start time.Time
	mu    sync.Mutex
	h     History
	// reached is each watcher's newest delivered resourceVersion, open streams included.
	reached map[int]int64
}

// NewLog starts a history at clk's now.
func NewLog(scenario string, clk clock.PassiveClock) *Log {
	return &Log{clock: clk, start: clk.Now(), h: History{Scenario: scenario}, reached: map[int]int64{}}
}

// now is nanoseconds since the log started.
func (l *Log) now() int64 { return int64(l.clock.Since(l.start)) }

func (l *Log) addOp(op Op) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h.Ops = append(l.h.Ops, op)
}

func (l *Log) addList(li List) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h.Lists = append(l.h.Lists, li)
}

func (l *Log) addWatch(w Watch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h.Watches = append(l.h.Watches, w)
}

func (l *Log) advance(client int, rv int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reached[client] = max(l.reached[client], rv)
}

// CaughtUp says whether every watcher in clients delivered the newest acknowledged write.
func (l *Log) CaughtUp(clients []int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last int64
	for _, op := range l.h.Ops {
		if op.Kind.IsWrite() && op.Outcome == OutcomeOK {
			last = max(last, op.RV)
		}
	}
	for _, c := range clients {
		if l.reached[c] < last {
			return false
		}
	}
	return true
}

// AddFault records a fault that ran from start to now.
func (l *Log) AddFault(name string, start int64, err error) {
	f := FaultRecord{Name: name, Start: start, End: l.now()}
	if err != nil {
		f.Error = err.Error()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h.Faults = append(l.h.Faults, f)
}

// AddRewind records a restore from a snapshot.
func (l *Log) AddRewind(rw Rewind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h.Rewinds = append(l.h.Rewinds, rw)
}

// Now is the log's clock, for faults.
func (l *Log) Now() int64 { return l.now() }

// History is a copy of what was recorded, with the final LIST, the start and the informers'
// states; the calls sorted by invocation.
func (l *Log) History(startRV int64, final *List, informers []InformerState) *History {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.h
	h.StartRV = startRV
	h.Final = final
	h.Informers = informers
	h.Ops = append([]Op(nil), h.Ops...)
	sort.SliceStable(h.Ops, func(i, j int) bool { return h.Ops[i].Call < h.Ops[j].Call })
	return &h
}

// Client is one recorded client: raw REST on ConfigMaps in one namespace. Raw REST because
// client-go's typed clients retry on their own (MaxRetries), and a retried create that had
// happened would come back AlreadyExists, a definite failure that was not.
type Client struct {
	ID  int
	rc  rest.Interface
	ns  string
	log *Log
}

// NewClient records the calls made with rc (a core/v1 REST client) in namespace ns into log.
func NewClient(id int, rc rest.Interface, ns string, log *Log) *Client {
	return &Client{ID: id, rc: rc, ns: ns, log: log}
}

func object(key, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: map[string]string{Label: "true"}},
		Data:       map[string]string{valueField: value},
	}
}

// parseRV reads a resourceVersion; skiff's are etcd revisions.
func parseRV(s string) int64 {
	rv, _ := strconv.ParseInt(s, 10, 64)
	return rv
}

// classify turns an error into an outcome: a Status below 500 or a refused connection means the
// call had no effect; a 5xx, a timeout or a broken connection leave it unknown.
func classify(err error) (Outcome, string) {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		reason := string(s.Reason)
		if reason == "" {
			reason = strconv.Itoa(int(s.Code))
		}
		if s.Code >= 500 || s.Code == 0 {
			return OutcomeUnknown, reason
		}
		return OutcomeFailed, reason
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return OutcomeFailed, "connection refused"
	}
	return OutcomeUnknown, err.Error()
}

// finish fills op's outcome from err and the returned object, and records it.
func (c *Client) finish(op Op, obj *corev1.ConfigMap, err error) Op {
	op.Return = c.log.now()
	if err != nil {
		op.Outcome, op.Reason = classify(err)
		if !op.Kind.IsWrite() && op.Outcome == OutcomeFailed && op.Reason == string(metav1.StatusReasonNotFound) {
			// A read that found nothing is a successful read of absence.
			op.Outcome, op.Reason = OutcomeOK, ""
		}
	} else {
		op.Outcome = OutcomeOK
		if obj != nil && op.Kind != OpDelete {
			op.RV = parseRV(obj.ResourceVersion)
			if !op.Kind.IsWrite() {
				op.Found, op.ReadValue = true, obj.Data[valueField]
			}
		}
	}
	c.log.addOp(op)
	return op
}

func (c *Client) start(kind OpKind, key string) Op {
	return Op{Client: c.ID, Kind: kind, Key: key, Call: c.log.now()}
}

// Create POSTs a new object carrying value.
func (c *Client) Create(ctx context.Context, key, value string) Op {
	op := c.start(OpCreate, key)
	op.Value = value
	out := &corev1.ConfigMap{}
	err := c.rc.Post().Namespace(c.ns).Resource("configmaps").MaxRetries(0).Body(object(key, value)).Do(ctx).Into(out)
	return c.finish(op, out, err)
}

// Update PUTs value if the object is at resourceVersion rv.
func (c *Client) Update(ctx context.Context, key, value string, rv int64) Op {
	op := c.start(OpUpdate, key)
	op.Value, op.Precondition = value, rv
	obj := object(key, value)
	obj.ResourceVersion = strconv.FormatInt(rv, 10)
	out := &corev1.ConfigMap{}
	err := c.rc.Put().Namespace(c.ns).Resource("configmaps").Name(key).MaxRetries(0).Body(obj).Do(ctx).Into(out)
	return c.finish(op, out, err)
}

// Apply server-side applies value, forcing ownership of the field (the clients take turns).
func (c *Client) Apply(ctx context.Context, key, value string) Op {
	op := c.start(OpApply, key)
	op.Value = value
	body, err := json.Marshal(object(key, value))
	if err != nil {
		return c.finish(op, nil, fmt.Errorf("encode apply: %w", err))
	}
	out := &corev1.ConfigMap{}
	err = c.rc.Patch(types.ApplyPatchType).Namespace(c.ns).Resource("configmaps").Name(key).MaxRetries(0).
		Param("fieldManager", fmt.Sprintf("robustness-%d", c.ID)).Param("force", "true").Body(body).Do(ctx).Into(out)
	return c.finish(op, out, err)
}

// Delete DELETEs the object if it is at resourceVersion rv (0: unconditionally).
func (c *Client) Delete(ctx context.Context, key string, rv int64) Op {
	op := c.start(OpDelete, key)
	op.Precondition = rv
	opts := &metav1.DeleteOptions{}
	if rv != 0 {
		s := strconv.FormatInt(rv, 10)
		opts.Preconditions = &metav1.Preconditions{ResourceVersion: &s}
	}
	err := c.rc.Delete().Namespace(c.ns).Resource("configmaps").Name(key).MaxRetries(0).Body(opts).Do(ctx).Error()
	return c.finish(op, nil, err)
}

// Get reads the object: a quorum read, or with cached resourceVersion=0.
func (c *Client) Get(ctx context.Context, key string, cached bool) Op {
	kind := OpGet
	req := c.rc.Get().Namespace(c.ns).Resource("configmaps").Name(key).MaxRetries(0)
	if cached {
		kind = OpGetCached
		req = req.Param("resourceVersion", "0")
	}
	op := c.start(kind, key)
	out := &corev1.ConfigMap{}
	err := req.Do(ctx).Into(out)
	return c.finish(op, out, err)
}

// List LISTs the suite's objects at requestRV with match, in pages of limit (0: one page).
func (c *Client) List(ctx context.Context, requestRV, match string, limit int64) List {
	l := List{Client: c.ID, RequestRV: requestRV, Match: match, Limit: limit, Call: c.log.now()}
	opts := metav1.ListOptions{LabelSelector: Label, ResourceVersion: requestRV, ResourceVersionMatch: metav1.ResourceVersionMatch(match), Limit: limit}
	for {
		page := &corev1.ConfigMapList{}
		err := c.rc.Get().Namespace(c.ns).Resource("configmaps").MaxRetries(0).
			VersionedParams(&opts, scheme.ParameterCodec).Do(ctx).Into(page)
		if err != nil {
			l.Outcome, l.Reason = classify(err)
			l.Items = nil
			break
		}
		if l.Pages == 0 {
			l.RV = parseRV(page.ResourceVersion)
		}
		l.Pages++
		for _, cm := range page.Items {
			l.Items = append(l.Items, Item{Key: cm.Name, Value: cm.Data[valueField], RV: parseRV(cm.ResourceVersion)})
		}
		if page.Continue == "" {
			l.Outcome = OutcomeOK
			break
		}
		// A continued LIST is served at the first page's resourceVersion; the token carries it.
		opts = metav1.ListOptions{LabelSelector: Label, Limit: limit, Continue: page.Continue}
	}
	l.Return = c.log.now()
	c.log.addList(l)
	return l
}

// WatchFrom watches the suite's objects from rv with bookmarks until ctx ends, recording each
// stream: a stream that breaks, or that the server ends after its timeoutSeconds (5 to 15 s, so
// resumes are frequent), is resumed from the last resourceVersion it delivered; every third one
// instead from where the stream before it started, an older resourceVersion that compaction may
// have removed. A stream that ends with 410 Gone is followed by a consistent LIST (recorded) and
// a watch from its resourceVersion, as a reflector does. retry is the pause after a failed
// attempt.
func (c *Client) WatchFrom(ctx context.Context, rv int64, retry time.Duration, clk clock.WithTicker) {
	older := rv
	for n := 1; ctx.Err() == nil; n++ {
		from := rv
		if n%3 == 0 {
			from = older
		}
		older = rv
		next, gone := c.watchOnce(ctx, from, int64(5+n%11))
		next = max(next, rv)
		if gone {
			if l := c.List(ctx, "", "", 0); l.Outcome == OutcomeOK {
				next = l.RV
			}
		}
		if next == rv || gone {
			select {
			case <-ctx.Done():
			case <-clk.After(retry):
			}
		}
		rv = next
	}
}

// watchOnce runs one stream from rv; it returns the newest resourceVersion delivered and whether
// the stream ended with 410 Gone.
func (c *Client) watchOnce(ctx context.Context, rv, timeoutSeconds int64) (int64, bool) {
	w := Watch{Client: c.ID, StartRV: rv, Call: c.log.now()}
	opts := metav1.ListOptions{LabelSelector: Label, Watch: true, AllowWatchBookmarks: true, ResourceVersion: strconv.FormatInt(rv, 10),
		TimeoutSeconds: &timeoutSeconds}
	stream, err := c.rc.Get().Namespace(c.ns).Resource("configmaps").MaxRetries(0).
		VersionedParams(&opts, scheme.ParameterCodec).Watch(ctx)
	if err != nil {
		w.End = err.Error()
		c.log.addWatch(w)
		return rv, apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
	}
	defer stream.Stop()
	last, gone := rv, false
	w.End = "closed"
	for ev := range stream.ResultChan() {
		if ev.Type == watch.Error {
			status := apierrors.FromObject(ev.Object)
			w.End = status.Error()
			gone = apierrors.IsGone(status) || apierrors.IsResourceExpired(status)
			break
		}
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			w.End = fmt.Sprintf("unexpected %T", ev.Object)
			break
		}
		e := Event{Type: string(ev.Type), RV: parseRV(cm.ResourceVersion), At: c.log.now()}
		if ev.Type != watch.Bookmark {
			e.Key, e.Value = cm.Name, cm.Data[valueField]
		}
		w.Events = append(w.Events, e)
		last = max(last, e.RV)
		c.log.advance(c.ID, e.RV)
	}
	if ctx.Err() != nil {
		w.End = "run ended"
	}
	c.log.addWatch(w)
	return last, gone
}
