package queue

import "container/heap"

// keyedHeap is a heap of items addressable by key. Each item's key is computed once, when it
// enters, and its entry knows its own position: a swap moves two pointers instead of building
// both keys again and rewriting the key map (a pop from 10,000 pending pods does about 30 swaps,
// on the scheduler's one thread).
type keyedHeap[T any] struct {
	items []*heapEntry[T]
	index map[string]*heapEntry[T]
	key   func(T) string
	less  func(a, b T) bool
}

// heapEntry is an item with its key and its position in items.
type heapEntry[T any] struct {
	item T
	key  string
	pos  int
}

func newKeyedHeap[T any](key func(T) string, less func(a, b T) bool) *keyedHeap[T] {
	return &keyedHeap[T]{index: map[string]*heapEntry[T]{}, key: key, less: less}
}

type heapAdapter[T any] struct{ h *keyedHeap[T] }

func (a heapAdapter[T]) Len() int           { return len(a.h.items) }
func (a heapAdapter[T]) Less(i, j int) bool { return a.h.less(a.h.items[i].item, a.h.items[j].item) }
func (a heapAdapter[T]) Swap(i, j int) {
	items := a.h.items
	items[i], items[j] = items[j], items[i]
	items[i].pos = i
	items[j].pos = j
}
func (a heapAdapter[T]) Push(x any) {
	h := a.h
	e := x.(*heapEntry[T])
	e.pos = len(h.items)
	h.items = append(h.items, e)
	h.index[e.key] = e
}
func (a heapAdapter[T]) Pop() any {
	h := a.h
	last := h.items[len(h.items)-1]
	h.items[len(h.items)-1] = nil
	h.items = h.items[:len(h.items)-1]
	delete(h.index, last.key)
	return last
}

// AddOrUpdate inserts item or replaces the item with the same key.
func (h *keyedHeap[T]) AddOrUpdate(item T) {
	k := h.key(item)
	if e, ok := h.index[k]; ok {
		e.item = item
		heap.Fix(heapAdapter[T]{h}, e.pos)
		return
	}
	heap.Push(heapAdapter[T]{h}, &heapEntry[T]{item: item, key: k})
}

// Delete removes the item with key k.
func (h *keyedHeap[T]) Delete(k string) (T, bool) {
	e, ok := h.index[k]
	if !ok {
		var zero T
		return zero, false
	}
	return heap.Remove(heapAdapter[T]{h}, e.pos).(*heapEntry[T]).item, true
}

// Get returns the item with key k.
func (h *keyedHeap[T]) Get(k string) (T, bool) {
	e, ok := h.index[k]
	if !ok {
		var zero T
		return zero, false
	}
	return e.item, true
}

// Peek returns the top item.
func (h *keyedHeap[T]) Peek() (T, bool) {
	if len(h.items) == 0 {
		var zero T
		return zero, false
	}
	return h.items[0].item, true
}

// Pop removes the top item.
func (h *keyedHeap[T]) Pop() (T, bool) {
	if len(h.items) == 0 {
		var zero T
		return zero, false
	}
	return heap.Pop(heapAdapter[T]{h}).(*heapEntry[T]).item, true
}

// Len is the number of items.
func (h *keyedHeap[T]) Len() int { return len(h.items) }
