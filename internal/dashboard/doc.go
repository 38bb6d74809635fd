// Package dashboard owns skiff's built-in web dashboard: the static page (HTML, CSS and plain
// JavaScript embedded with go:embed) served at /dashboard/ on every API server, and the loopback
// server of `skiff dashboard`, which serves the same page and reverse-proxies the API with the
// node's admin credentials (like kubectl proxy).
//
// The page reads everything through the Kubernetes API as the signed-in user, so RBAC applies;
// this package therefore serves only files and never reads cluster data itself. It must not
// import the API server, storage, etcd or the cluster assembly: the API server mounts Assets
// through its non-resource handler hook, and the proxy reaches the API over HTTP.
package dashboard
