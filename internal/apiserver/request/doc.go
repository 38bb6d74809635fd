// Package request carries what the API server learned about a request (today: the authenticated
// user) through a context.Context to the code that acts on it. It is tiny on purpose: the registry's
// strategies need the requesting user (a CertificateSigningRequest records who asked for it) but
// must not import the API server's HTTP layer, so both import this package instead.
//
// It must not import anything of skiff's.
package request
