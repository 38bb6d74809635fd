package scheduler

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// The replay is what makes TestNoOvercommitUnderChurn meaningful, so it is checked on its own:
// it must flag an overcommitting binding and accept the legitimate races.
func TestReplay(t *testing.T) {
	t0 := time.Now()
	nodeEv := func(rv uint64, at time.Duration, cpu string) recorded {
		return recorded{rv: rv, arrived: t0.Add(at), typ: watch.Modified, node: st.MakeNode().Name("n").Capacity(st.Res{v1.ResourceCPU: cpu}).Obj()}
	}
	podEv := func(rv uint64, at time.Duration, typ watch.EventType, name, node, cpu string) recorded {
		p := st.MakePod().Name(name).Node(node).Req(st.Res{v1.ResourceCPU: cpu}).Obj()
		p.UID = types.UID(name)
		return recorded{rv: rv, arrived: t0.Add(at), typ: typ, pod: p}
	}
	cases := []struct {
		name           string
		events         []recorded
		bindings, race int
		violation      string
	}{
		{
			name:     "fits",
			events:   []recorded{nodeEv(1, 0, "2"), podEv(2, 0, watch.Added, "a", "", "1"), podEv(3, 0, watch.Modified, "a", "n", "1"), podEv(4, 0, watch.Added, "b", "n", "1")},
			bindings: 2,
		},
		{
			name:      "overcommit",
			events:    []recorded{nodeEv(1, 0, "2"), podEv(2, 0, watch.Added, "a", "n", "1500m"), podEv(3, 0, watch.Added, "b", "n", "1")},
			bindings:  2,
			violation: "binding of b to n at resourceVersion 3",
		},
		{
			name: "deletion frees room; events replayed in resourceVersion order, not arrival order",
			events: []recorded{nodeEv(1, 0, "2"), podEv(2, 0, watch.Added, "a", "n", "1500m"),
				podEv(4, 0, watch.Added, "b", "n", "1"), podEv(3, time.Second, watch.Deleted, "a", "n", "1500m")},
			bindings: 2,
		},
		{
			name:     "shrink in flight",
			events:   []recorded{nodeEv(1, 0, "2"), podEv(2, 0, watch.Added, "a", "n", "1"), nodeEv(3, 0, "1"), podEv(4, time.Second, watch.Added, "b", "n", "1")},
			bindings: 2, race: 1,
		},
		{
			name:      "shrink long seen",
			events:    []recorded{nodeEv(1, 0, "2"), podEv(2, 0, watch.Added, "a", "n", "1"), nodeEv(3, 0, "1"), podEv(4, 5*time.Second, watch.Added, "b", "n", "1")},
			bindings:  2,
			violation: "binding of b to n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bindings, raced, violations := replay(tc.events)
			if bindings != tc.bindings || raced != tc.race {
				t.Errorf("bindings %d raced %d, want %d and %d", bindings, raced, tc.bindings, tc.race)
			}
			switch {
			case tc.violation == "" && len(violations) > 0:
				t.Errorf("unexpected violations %v", violations)
			case tc.violation != "" && (len(violations) != 1 || !strings.Contains(violations[0], tc.violation)):
				t.Errorf("violations %v, want one containing %q", violations, tc.violation)
			}
		})
	}
}
