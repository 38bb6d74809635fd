package queue

import "container/heap"

// keyedHeap is a heap of items addressable by key.
type keyedHeap[T any] struct {
	items []T
	index map[string]int
	key   func(T) string
	less  func(a, b T) bool
}

func newKeyedHeap[T any](key func(T) string, less func(a, b T) bool) *keyedHeap[T] {
	return &keyedHeap[T]{index: map[string]int{}, key: key, less: less}
}

type heapAdapter[T any] struct{ h *keyedHeap[T] }

func (a heapAdapter[T]) Len() int           { return len(a.h.items) }
func (a heapAdapter[T]) Less(i, j int) bool { return a.h.less(a.h.items[i], a.h.items[j]) }
func (a heapAdapter[T]) Swap(i, j int) {
	h := a.h
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.key(h.items[i])] = i
	h.index[h.key(h.items[j])] = j
}
func (a heapAdapter[T]) Push(x any) {
	h := a.h
	h.index[h.key(x.(T))] = len(h.items)
	h.items = append(h.items, x.(T))
}
func (a heapAdapter[T]) Pop() any {
	h := a.h
	last := h.items[len(h.items)-1]
	var zero T
	h.items[len(h.items)-1] = zero
	h.items = h.items[:len(h.items)-1]
	delete(h.index, h.key(last))
	return last
}

// AddOrUpdate inserts item or replaces the item with the same key.
func (h *keyedHeap[T]) AddOrUpdate(item T) {
	if i, ok := h.index[h.key(item)]; ok {
		h.items[i] = item
		heap.Fix(heapAdapter[T]{h}, i)
		return
	}
	heap.Push(heapAdapter[T]{h}, item)
}

// Delete removes the item with key k.
func (h *keyedHeap[T]) Delete(k string) (T, bool) {
	i, ok := h.index[k]
	if !ok {
		var zero T
		return zero, false
	}
	return heap.Remove(heapAdapter[T]{h}, i).(T), true
}

// Get returns the item with key k.
func (h *keyedHeap[T]) Get(k string) (T, bool) {
	i, ok := h.index[k]
	if !ok {
		var zero T
		return zero, false
	}
	return h.items[i], true
}

// Peek returns the top item.
func (h *keyedHeap[T]) Peek() (T, bool) {
	if len(h.items) == 0 {
		var zero T
		return zero, false
	}
	return h.items[0], true
}

// Pop removes the top item.
func (h *keyedHeap[T]) Pop() (T, bool) {
	if len(h.items) == 0 {
		var zero T
		return zero, false
	}
	return heap.Pop(heapAdapter[T]{h}).(T), true
}

// Len is the number of items.
func (h *keyedHeap[T]) Len() int { return len(h.items) }
