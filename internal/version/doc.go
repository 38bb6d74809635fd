// Package version is the one place that says which Kubernetes version skiff is: what /version
// reports, what kubelets and simulated nodes put in their NodeInfo, and what probes send as their
// User-Agent. skiff serves the v1.33 API (ServiceCIDR and IPAddress among its additions), so it
// reports v1.33 everywhere.
//
// It owns only constants and pure functions over them; it must not import anything of skiff's,
// hold mutable state, or read build information at run time.
package version
