package manifests

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// States of a file in the status ConfigMap.
const (
	// StateApplied: every object of the file is in the cluster as the file says.
	StateApplied = "Applied"
	// StateRefused: the file does not parse, or holds an object another file holds; nothing of it
	// was applied or pruned.
	StateRefused = "Refused"
	// StateFailed: some of the file's objects could not be applied; the next pass tries them again.
	StateFailed = "Failed"
)

// FileStatus is one file's entry in the ConfigMap kube-system/skiff-manifests (JSON, under the
// file's LabelValue, as ConfigMap keys cannot hold a '/').
type FileStatus struct {
	File    string `json:"file"`
	Hash    string `json:"hash"`
	State   string `json:"state"`
	Objects int    `json:"objects"`
	Message string `json:"message,omitempty"`
}

// Outcome is what carrying a plan out did: per file, the objects that could not be applied, and
// the objects pruned.
type Outcome struct {
	Failed map[string][]error
	Pruned []Deployed
}

// Statuses are the files' entries after a pass, keyed by LabelValue.
func Statuses(files []File, p Plan, out Outcome) map[string]FileStatus {
	st := make(map[string]FileStatus, len(files))
	for _, f := range files {
		s := FileStatus{File: f.Name, Hash: f.Hash, State: StateApplied, Objects: len(f.Objects)}
		if err := p.Refused[f.Name]; err != nil {
			s.State, s.Message = StateRefused, err.Error()
		} else if errs := out.Failed[f.Name]; len(errs) > 0 {
			msgs := make([]string, len(errs))
			for i, err := range errs {
				msgs[i] = err.Error()
			}
			s.State, s.Message = StateFailed, strings.Join(msgs, "; ")
		}
		st[LabelValue(f.Name)] = s
	}
	return st
}

// StatusEvent is an Event to record on the status ConfigMap.
type StatusEvent struct {
	Type, Reason, Message string
}

// StatusChanges compares the entries in the ConfigMap (old) with a pass's (now): the ConfigMap
// data to write (nil when unchanged) and the Events that say what changed. An entry that stays
// Failed or Refused with the same message makes no new Event, so a broken file is reported once,
// not every pass.
func StatusChanges(old map[string]string, now map[string]FileStatus, pruned []Deployed) (map[string]string, []StatusEvent) {
	data := make(map[string]string, len(now))
	var events []StatusEvent
	for _, key := range slices.Sorted(maps.Keys(now)) {
		s := now[key]
		enc, err := json.Marshal(s)
		if err != nil {
			continue
		}
		data[key] = string(enc)
		var before FileStatus
		if prev, ok := old[key]; ok && json.Unmarshal([]byte(prev), &before) == nil &&
			before.State == s.State && before.Message == s.Message && (before.Hash == s.Hash || s.State != StateApplied) {
			continue
		}
		switch s.State {
		case StateApplied:
			events = append(events, StatusEvent{Type: corev1.EventTypeNormal, Reason: "Applied", Message: fmt.Sprintf("%s: applied %d objects", s.File, s.Objects)})
		case StateRefused:
			events = append(events, StatusEvent{Type: corev1.EventTypeWarning, Reason: "Refused", Message: fmt.Sprintf("%s: %s", s.File, s.Message)})
		default:
			events = append(events, StatusEvent{Type: corev1.EventTypeWarning, Reason: "FailedApply", Message: fmt.Sprintf("%s: %s", s.File, s.Message)})
		}
	}
	for _, d := range pruned {
		events = append(events, StatusEvent{Type: corev1.EventTypeNormal, Reason: "Pruned", Message: fmt.Sprintf("%s: deleted %s", cmp.Or(d.File, d.FileLabel), d.Key)})
	}
	if maps.Equal(old, data) {
		return nil, events
	}
	return data, events
}
