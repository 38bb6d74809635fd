// Package registry describes served resources: their kinds, names, scope, create/update strategies
// (validation, status handling, generation), subresources and table printing. The group packages
// below it declare the built-in resources; the API server serves any Resource generically, so
// CustomResourceDefinitions can plug in later without new handler code.
//
// It must not import the API server's HTTP layer or storage.
package registry
