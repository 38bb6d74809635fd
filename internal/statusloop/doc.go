// Package statusloop is the loop of the API server's status writers (a FlowSchema's Dangling
// condition, a ValidatingAdmissionPolicy's type checking): a pass over the objects at each kick of
// their informer, and again after a while when a write failed for a reason no informer event will
// follow. It knows no resource; the writers plan their writes themselves, as pure functions.
package statusloop
