package etcdsnapshot

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		spec string
		ok   bool
		// next is the first time after t0 the schedule fires.
		next time.Time
	}{
		{spec: "0 */12 * * *", ok: true, next: t0.Add(12 * time.Hour)},
		{spec: "* * * * *", ok: true, next: t0.Add(time.Minute)},
		{spec: "*/15 * * * * *", ok: true, next: t0.Add(15 * time.Second)},
		{spec: "@every 15s", ok: true, next: t0.Add(15 * time.Second)},
		{spec: "@hourly", ok: true, next: t0.Add(time.Hour)},
		{spec: "", ok: false},
		{spec: "every minute", ok: false},
		{spec: "61 * * * *", ok: false},
	} {
		s, err := ParseSchedule(tc.spec)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.spec, err, tc.ok)
			continue
		}
		if tc.ok && !s.Next(t0).Equal(tc.next) {
			t.Errorf("%q: next after %s is %s, want %s", tc.spec, t0, s.Next(t0), tc.next)
		}
	}
}

func TestNames(t *testing.T) {
	name := FileName("cp-1.example", t0.Add(1500*time.Millisecond).In(time.FixedZone("x", 3600)))
	if name != "skiff-etcd-cp-1.example-20260301T120001Z.db" {
		t.Fatalf("name %s", name)
	}
	f, ok := ParseName(name)
	if !ok || f.Node != "cp-1.example" || !f.Taken.Equal(t0.Add(time.Second)) {
		t.Fatalf("parse %s: %+v %v", name, f, ok)
	}
	for _, other := range []string{
		"backup.db", "skiff-etcd-cp-1-20260301T120001Z.db.sha256", "skiff-etcd-cp-1-20260301T120001Z.db.part-123",
		"skiff-etcd-20260301T120001Z.db", "skiff-etcd-cp-1-yesterday.db", "skiff-etcd-cp-1-20260301T120001Z.tar",
	} {
		if f, ok := ParseName(other); ok {
			t.Errorf("%s parsed as a scheduled snapshot: %+v", other, f)
		}
	}
}

func TestDue(t *testing.T) {
	everyMinute, _ := ParseSchedule("* * * * *")
	every10s, _ := ParseSchedule("*/10 * * * * *")
	never, _ := ParseSchedule("0 0 30 2 *")
	for _, tc := range []struct {
		name      string
		last, now time.Time
		sched     interface{ Next(time.Time) time.Time }
		due       bool
		next      time.Time
	}{
		{name: "started just now: wait for the first run", sched: everyMinute, last: t0.Add(10 * time.Second), now: t0.Add(10 * time.Second), next: t0.Add(time.Minute)},
		{name: "the run's time came", sched: everyMinute, last: t0.Add(10 * time.Second), now: t0.Add(time.Minute), due: true, next: t0.Add(2 * time.Minute)},
		{name: "woke late: due, next counts from now", sched: everyMinute, last: t0, now: t0.Add(90 * time.Second), due: true, next: t0.Add(2 * time.Minute)},
		{name: "missed runs are one snapshot", sched: everyMinute, last: t0, now: t0.Add(time.Hour), due: true, next: t0.Add(61 * time.Minute)},
		{name: "taken this minute already", sched: everyMinute, last: t0.Add(time.Minute), now: t0.Add(time.Minute + 500*time.Millisecond), next: t0.Add(2 * time.Minute)},
		{name: "seconds field", sched: every10s, last: t0, now: t0.Add(9 * time.Second), next: t0.Add(10 * time.Second)},
		{name: "seconds field due", sched: every10s, last: t0, now: t0.Add(10*time.Second + time.Millisecond), due: true, next: t0.Add(20 * time.Second)},
		{name: "never fires", sched: never, last: t0, now: t0.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, next := Due(tc.sched, tc.last, tc.now)
			if due != tc.due || !next.Equal(tc.next) {
				t.Fatalf("Due = %v, %s; want %v, %s", due, next, tc.due, tc.next)
			}
		})
	}
}

func TestLast(t *testing.T) {
	files := []File{
		{Name: "a", Node: "cp-1", Taken: t0.Add(time.Minute)},
		{Name: "b", Node: "cp-1", Taken: t0.Add(3 * time.Minute)},
		{Name: "c", Node: "cp-2", Taken: t0.Add(5 * time.Minute)},
	}
	for _, tc := range []struct {
		name  string
		node  string
		since time.Time
		want  time.Time
	}{
		{name: "newest of this node's", node: "cp-1", since: t0, want: t0.Add(3 * time.Minute)},
		{name: "another node's files do not count", node: "cp-3", since: t0, want: t0},
		{name: "since is newer", node: "cp-1", since: t0.Add(4 * time.Minute), want: t0.Add(4 * time.Minute)},
	} {
		if got := Last(files, tc.node, tc.since); !got.Equal(tc.want) {
			t.Errorf("%s: Last = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestPrune(t *testing.T) {
	f := func(min int, node string) File {
		at := t0.Add(time.Duration(min) * time.Minute)
		return File{Name: FileName(node, at), Node: node, Taken: at}
	}
	names := func(fs []File) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name      string
		files     []File
		retention int
		want      []File
	}{
		{name: "under retention", files: []File{f(1, "a"), f(2, "a")}, retention: 3},
		{name: "at retention", files: []File{f(1, "a"), f(2, "a"), f(3, "a")}, retention: 3},
		{name: "oldest go, in any order", files: []File{f(4, "a"), f(1, "a"), f(5, "a"), f(2, "a"), f(3, "a")}, retention: 3, want: []File{f(1, "a"), f(2, "a")}},
		{name: "every node's files count in one dir", files: []File{f(1, "b"), f(2, "a"), f(3, "b")}, retention: 2, want: []File{f(1, "b")}},
		{name: "same second: name decides, stably", files: []File{f(1, "a"), f(1, "b")}, retention: 1, want: []File{f(1, "a")}},
		{name: "retention 0 keeps all", files: []File{f(1, "a"), f(2, "a")}, retention: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := names(Prune(tc.files, tc.retention)), names(tc.want); !slices.Equal(got, want) {
				t.Fatalf("Prune = %v, want %v", got, want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	local := []Snapshot{
		{Name: "skiff-etcd-a-2.db", Node: "a", Taken: at(2), Size: 100, SHA256: "local-sum"},
		{Name: "by-hand.db", Taken: at(1), Size: 50},
	}
	recorded := []Snapshot{
		{Name: "skiff-etcd-a-2.db", Node: "a", Taken: at(2), Size: 99, Revision: 7, Keys: 3, SHA256: "recorded-sum"},
		{Name: "skiff-etcd-b-3.db", Node: "b", Taken: at(3), Size: 120, Revision: 9},
	}
	got := Merge(local, recorded)
	want := []Listing{
		{Snapshot: Snapshot{Name: "by-hand.db", Taken: at(1), Size: 50}, Local: true},
		{Snapshot: Snapshot{Name: "skiff-etcd-a-2.db", Node: "a", Taken: at(2), Size: 100, Revision: 7, Keys: 3, SHA256: "local-sum"}, Local: true, Recorded: true},
		{Snapshot: Snapshot{Name: "skiff-etcd-b-3.db", Node: "b", Taken: at(3), Size: 120, Revision: 9}, Recorded: true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Merge:\n got %+v\nwant %+v", got, want)
	}
}
