// Package serviceaccount keeps a "default" ServiceAccount in every active
// namespace, recreating it if it is deleted. It does not mint tokens (pods
// get projected tokens from the API server's TokenRequest).
//
// It reaches the cluster only through client-go.
package serviceaccount
