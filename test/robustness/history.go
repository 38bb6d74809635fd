package robustness

import (
	"encoding/json"
	"fmt"
	"os"
)

// OpKind names a single-object call.
type OpKind string

// The single-object calls the traffic makes.
const (
	// OpCreate is a POST of a new object.
	OpCreate OpKind = "create"
	// OpUpdate is a PUT carrying metadata.resourceVersion: a compare-and-set.
	OpUpdate OpKind = "update"
	// OpDelete is a DELETE with preconditions.resourceVersion (Precondition 0: none).
	OpDelete OpKind = "delete"
	// OpApply is a server-side apply PATCH (an upsert without precondition).
	OpApply OpKind = "apply"
	// OpGet is a GET without resourceVersion: a quorum read, which must be linearizable.
	OpGet OpKind = "get"
	// OpGetCached is a GET with resourceVersion=0: any version the server has is allowed, so it
	// is checked for phantoms only, not for recency.
	OpGetCached OpKind = "get-rv0"
)

// IsWrite says whether the call changes the store when it succeeds.
func (k OpKind) IsWrite() bool {
	return k == OpCreate || k == OpUpdate || k == OpDelete || k == OpApply
}

// Outcome is what the client knows about a call's effect.
type Outcome string

// The outcomes.
const (
	// OutcomeOK: the server acknowledged the call.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: the call definitely had no effect (a Status such as Conflict, NotFound,
	// AlreadyExists, or a connection refused before anything was sent).
	OutcomeFailed Outcome = "failed"
	// OutcomeUnknown: the call may or may not have taken effect (a timeout, a reset connection,
	// a 5xx): the checker must allow both.
	OutcomeUnknown Outcome = "unknown"
)

// Op is one recorded single-object call. Times are nanoseconds since the run's start.
type Op struct {
	Client int    `json:"client"`
	Kind   OpKind `json:"kind"`
	Key    string `json:"key"`
	// Value is the unique value a write puts in the object (data.v); for a delete, empty.
	Value string `json:"value,omitempty"`
	// Precondition is the resourceVersion an update or delete demands (0: none).
	Precondition int64   `json:"precondition,omitempty"`
	Call         int64   `json:"call"`
	Return       int64   `json:"return"`
	Outcome      Outcome `json:"outcome"`
	// Reason is the Status reason or the transport error of a call that did not succeed.
	Reason string `json:"reason,omitempty"`
	// Found, ReadValue and RV are the result: for a write the resourceVersion it returned, for a
	// read whether the object exists, its value and resourceVersion.
	Found     bool   `json:"found,omitempty"`
	ReadValue string `json:"readValue,omitempty"`
	RV        int64  `json:"rv,omitempty"`
}

func (o Op) String() string {
	s := fmt.Sprintf("c%d %s %s", o.Client, o.Kind, o.Key)
	if o.Value != "" {
		s += " v=" + o.Value
	}
	if o.Precondition != 0 {
		s += fmt.Sprintf(" if-rv=%d", o.Precondition)
	}
	s += " -> " + string(o.Outcome)
	switch {
	case o.Outcome != OutcomeOK:
		s += " (" + o.Reason + ")"
	case o.Kind.IsWrite():
		s += fmt.Sprintf(" rv=%d", o.RV)
	case o.Found:
		s += fmt.Sprintf(" %s@%d", o.ReadValue, o.RV)
	default:
		s += " not found"
	}
	return s
}

// Event types of a watch stream, as the API names them.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
	EventBookmark = "BOOKMARK"
)

// Event is one event a watch delivered. A bookmark has only RV.
type Event struct {
	Type  string `json:"type"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	RV    int64  `json:"rv"`
	// At is when the client received it.
	At int64 `json:"at"`
}

// Watch is one watch stream: started from StartRV, ended by End (a 410, a broken connection, or
// the run's end). A resumed or relisted watch is a new stream.
type Watch struct {
	Client  int     `json:"client"`
	StartRV int64   `json:"startRV"`
	Call    int64   `json:"call"`
	Events  []Event `json:"events"`
	End     string  `json:"end"`
}

// Item is one object of a LIST or an informer's cache.
type Item struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	RV    int64  `json:"rv"`
}

// List is one LIST, its pages joined (every page of a continued LIST is served at the first
// page's resourceVersion).
type List struct {
	Client int `json:"client"`
	// RequestRV and Match are the resourceVersion and resourceVersionMatch asked for ("" and "":
	// a consistent LIST, which must see every write acknowledged before it started).
	RequestRV string  `json:"requestRV,omitempty"`
	Match     string  `json:"match,omitempty"`
	Limit     int64   `json:"limit,omitempty"`
	Pages     int     `json:"pages,omitempty"`
	Call      int64   `json:"call"`
	Return    int64   `json:"return"`
	Outcome   Outcome `json:"outcome"`
	Reason    string  `json:"reason,omitempty"`
	RV        int64   `json:"rv,omitempty"`
	Items     []Item  `json:"items,omitempty"`
}

// Consistent says whether the LIST promised to be at least as new as every write acknowledged
// before it started.
func (l List) Consistent() bool { return l.RequestRV == "" }

// InformerState is an informer's cache once traffic stopped and it had time to catch up.
type InformerState struct {
	Client int    `json:"client"`
	Synced bool   `json:"synced"`
	Items  []Item `json:"items"`
}

// History is everything one run recorded.
type History struct {
	Scenario string `json:"scenario"`
	// StartRV is the resourceVersion of the empty test namespace's LIST before traffic: the
	// history of its objects begins there.
	StartRV int64 `json:"startRV"`
	// Faults are the injected faults with their times, for the report.
	Faults    []FaultRecord   `json:"faults,omitempty"`
	Ops       []Op            `json:"ops"`
	Watches   []Watch         `json:"watches"`
	Lists     []List          `json:"lists"`
	Informers []InformerState `json:"informers,omitempty"`
	// Final is a consistent LIST made after traffic stopped and the cluster recovered.
	Final *List `json:"final,omitempty"`
	// Objects are the versions of control-plane objects (the run's pods and ReplicaSets,
	// kube-system's Leases) that watches and LISTs delivered, for the control-plane invariants;
	// ObjectGaps the revisions their record may lack.
	Objects    []ObjectVersion `json:"objects,omitempty"`
	ObjectGaps []RecordGap     `json:"objectGaps,omitempty"`
	// Rewinds are the restores from an etcd snapshot the faults made (rewind.go).
	Rewinds []Rewind `json:"rewinds,omitempty"`
}

// FaultRecord is one injected fault.
type FaultRecord struct {
	Name  string `json:"name"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Error string `json:"error,omitempty"`
}

// Save writes the history as JSON.
func (h *History) Save(path string) error {
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write history %s: %w", path, err)
	}
	return nil
}

// LoadHistory reads a history Save wrote.
func LoadHistory(path string) (*History, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	var h History
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("decode history %s: %w", path, err)
	}
	return &h, nil
}
