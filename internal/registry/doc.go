// Package registry describes served resources: their kinds, names, scope, create/update strategies
// (validation, status handling, generation), subresources and table printing, and the optional hooks
// a strategy offers the generic store (hooks.go: BeginCreate/AfterCreate, BeginUpdate/AfterUpdate,
// AfterDelete, DeleteValidator, DeletionHolder), and the action subresources (action.go: pods/binding,
// pods/eviction, serviceaccounts/token), which act on the generic store through ObjectStore so that
// their conflicts come from its precondition checks. The group packages below it declare the built-in
// resources; the API server serves any Resource generically through one store, so
// CustomResourceDefinitions can plug in later as one more strategy without new handler code.
//
// It must not import the API server's HTTP layer, its store, or storage.
package registry
