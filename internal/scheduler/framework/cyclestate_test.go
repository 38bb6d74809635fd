package framework

import (
	"fmt"
	"sync"
	"testing"
)

type counterState struct{ n int }

func (c *counterState) Clone() StateData { return &counterState{n: c.n} }

// TestCycleState: reads find what was written last under each key, a missing key is an error that
// names it, a clone holds copies, and readers running beside a writer (the filtering workers beside
// a plugin's write) always see a whole entry.
func TestCycleState(t *testing.T) {
	c := NewCycleState()
	if _, err := c.Read("absent"); err == nil || err.Error() != `cycle state: no data for key "absent"` {
		t.Fatalf("read of a missing key: %v", err)
	}
	for i := range 12 {
		c.Write(StateKey(fmt.Sprint("k", i)), &counterState{n: i})
	}
	c.Write("k3", &counterState{n: 33})
	for i := range 12 {
		want := i
		if i == 3 {
			want = 33
		}
		d, err := c.Read(StateKey(fmt.Sprint("k", i)))
		if err != nil || d.(*counterState).n != want {
			t.Fatalf("k%d: %v %v, want %d", i, d, err, want)
		}
	}
	if n := len(c.list()); n != 12 {
		t.Fatalf("%d entries after 13 writes to 12 keys", n)
	}
	clone := c.Clone()
	orig, _ := c.Read("k5")
	orig.(*counterState).n = 500
	c.Write("k0", &counterState{n: 100})
	if d, _ := clone.Read("k5"); d.(*counterState).n != 5 {
		t.Fatalf("the clone's k5 changed with the original's: %d", d.(*counterState).n)
	}
	if d, _ := clone.Read("k0"); d.(*counterState).n != 0 {
		t.Fatalf("a write after the clone reached it: %d", d.(*counterState).n)
	}
	if NewCycleState().Clone().list() != nil {
		t.Fatal("the clone of an empty state has entries")
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 12 {
					if _, err := c.Read(StateKey(fmt.Sprint("k", i))); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	for i := range 500 {
		c.Write(StateKey(fmt.Sprint("k", i%12)), &counterState{n: i})
		c.Write(StateKey(fmt.Sprint("extra", i%20)), &counterState{n: i})
	}
	close(stop)
	wg.Wait()
}
