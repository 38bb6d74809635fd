package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeyedHeapAgainstSortedModel applies random adds, updates, deletes and pops to a keyedHeap
// and to a plain map, and checks after each step that lookups agree, that every entry knows its
// position, and that pops come out in order.
func TestKeyedHeapAgainstSortedModel(t *testing.T) {
	type item struct {
		name  string
		value int
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		h := newKeyedHeap(func(it item) string { return it.name }, func(a, b item) bool {
			if a.value != b.value {
				return a.value < b.value
			}
			return a.name < b.name
		})
		model := map[string]int{}
		for step := range 2000 {
			name := fmt.Sprintf("p%d", rng.IntN(60))
			switch op := rng.IntN(10); {
			case op < 5:
				v := rng.IntN(100)
				h.AddOrUpdate(item{name, v})
				model[name] = v
			case op < 7:
				got, ok := h.Delete(name)
				want, had := model[name]
				if ok != had || (ok && got.value != want) {
					t.Fatalf("seed %d step %d: Delete(%s) = %v %v, model %v %v", seed, step, name, got, ok, want, had)
				}
				delete(model, name)
			default:
				got, ok := h.Pop()
				if !ok {
					if len(model) != 0 {
						t.Fatalf("seed %d step %d: Pop found nothing, model holds %d", seed, step, len(model))
					}
					continue
				}
				for n, v := range model {
					if v < got.value || (v == got.value && n < got.name) {
						t.Fatalf("seed %d step %d: popped %v before %s=%d", seed, step, got, n, v)
					}
				}
				if model[got.name] != got.value {
					t.Fatalf("seed %d step %d: popped %v, model has %d", seed, step, got, model[got.name])
				}
				delete(model, got.name)
			}
			if h.Len() != len(model) || len(h.index) != len(model) {
				t.Fatalf("seed %d step %d: %d items, %d keys, model %d", seed, step, h.Len(), len(h.index), len(model))
			}
			for i, e := range h.items {
				if e.pos != i || h.index[e.key] != e {
					t.Fatalf("seed %d step %d: entry %q at %d says %d", seed, step, e.key, i, e.pos)
				}
				if got, ok := h.Get(e.key); !ok || got.value != model[e.key] {
					t.Fatalf("seed %d step %d: Get(%s) = %v", seed, step, e.key, got)
				}
			}
		}
		var rest []int
		for h.Len() > 0 {
			it, _ := h.Pop()
			rest = append(rest, it.value)
		}
		if !slices.IsSorted(rest) {
			t.Fatalf("seed %d: drained out of order: %v", seed, rest)
		}
	}
}
