package manifests

import (
	"errors"
	"strings"
	"testing"
)

func TestStatusesAndChanges(t *testing.T) {
	good := Parse("good.yaml", []byte(cm("one", "1")))
	bad := Parse("bad.yaml", []byte("kind: [unclosed\n"))
	failing := Parse("dir/fail.yaml", []byte(crontab))
	files := []File{good, bad, failing}
	p := Decide(files, nil)
	out := Outcome{Failed: map[string][]error{"dir/fail.yaml": {errors.New("CronTab is not served")}}}
	st := Statuses(files, p, out)
	if s := st["good.yaml"]; s.State != StateApplied || s.Objects != 1 || s.File != "good.yaml" || s.Hash != good.Hash {
		t.Errorf("good: %+v", s)
	}
	if s := st["bad.yaml"]; s.State != StateRefused || !strings.Contains(s.Message, "document 1") {
		t.Errorf("bad: %+v", s)
	}
	if s := st[LabelValue("dir/fail.yaml")]; s.State != StateFailed || s.Message != "CronTab is not served" || s.File != "dir/fail.yaml" {
		t.Errorf("fail: %+v", s)
	}

	pruned := []Deployed{{Key: Key{Kind: "ConfigMap", Namespace: "default", Name: "old"}, File: "gone.yaml"}}
	data, events := StatusChanges(nil, st, pruned)
	if len(data) != 3 {
		t.Fatalf("data %v", data)
	}
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason+": "+e.Message)
	}
	want := []string{"Refused: bad.yaml: document 1", "FailedApply: dir/fail.yaml: CronTab is not served",
		"Applied: good.yaml: applied 1 objects", "Pruned: gone.yaml: deleted ConfigMap default/old"}
	if len(reasons) != len(want) {
		t.Fatalf("events %v, want %v", reasons, want)
	}
	for i := range want {
		if !strings.HasPrefix(reasons[i], want[i]) {
			t.Errorf("event %d: %q, want %q", i, reasons[i], want[i])
		}
	}

	// The next pass with the same outcome writes nothing and reports nothing: a broken file is
	// one Event, not one per pass.
	again, events := StatusChanges(data, Statuses(files, p, out), nil)
	if again != nil || len(events) != 0 {
		t.Fatalf("unchanged pass: data %v events %v", again, events)
	}

	// A changed good file is reported again; a fixed file too; a removed file leaves the data.
	changed := Parse("good.yaml", []byte(cm("one", "2")))
	files = []File{changed, failing}
	next, events := StatusChanges(data, Statuses(files, Decide(files, nil), Outcome{}), nil)
	if len(next) != 2 || next["bad.yaml"] != "" {
		t.Fatalf("data %v", next)
	}
	if len(events) != 2 || events[0].Reason != "Applied" || events[1].Reason != "Applied" {
		t.Fatalf("events %+v", events)
	}
}
