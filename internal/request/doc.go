// Package request carries what the API server learned about a request through a context.Context
// to the code that acts on it, and the small vocabulary shared by the HTTP layer and the code that
// must not import it: the authenticated user, a request's attributes (RequestInfo), the Authorizer
// interface, and the rule listing and token authentication the review APIs borrow. The registry's
// strategies and computed resources and the authorizers (internal/authz) import it instead of the
// API server's HTTP layer.
//
// It must not import anything of skiff's.
package request
