package kubeletauth

import (
	"net/http"
	"strings"
)

// Attributes is what a kubelet API request asks to do, in the API server's terms: a verb on the
// node object's subresources. The request is allowed when any one of Subresources is.
type Attributes struct {
	Verb         string
	NodeName     string
	Subresources []string
	Path         string
}

// AttributesFor maps a request to the kubelet API to its authorization attributes, with the
// mapping of upstream's kubelet (v1.33, KubeletFineGrainedAuthz on): the verb comes from the HTTP
// method (an unknown method, HEAD included, has none, so only a "*" verb grants it); /stats ->
// nodes/stats, /metrics -> nodes/metrics, /logs -> nodes/log, /checkpoint -> nodes/checkpoint,
// /statusz -> nodes/statusz, /flagz -> nodes/configz; /pods, /runningpods, /healthz and /configz
// are allowed by nodes/pods (nodes/healthz, nodes/configz) or by nodes/proxy; everything else
// (exec, attach, portForward, containerLogs, run, ...) needs nodes/proxy.
func AttributesFor(method, path, nodeName string) Attributes {
	verb := ""
	switch method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	var subresources []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/runningpods"):
		subresources = append(subresources, "pods")
	case isSubpath(path, "/healthz"):
		subresources = append(subresources, "healthz")
	case isSubpath(path, "/configz"):
		subresources = append(subresources, "configz")
	}
	switch {
	case isSubpath(path, "/stats"):
		subresources = append(subresources, "stats")
	case isSubpath(path, "/metrics"):
		subresources = append(subresources, "metrics")
	case isSubpath(path, "/logs"):
		subresources = append(subresources, "log")
	case isSubpath(path, "/checkpoint"):
		subresources = append(subresources, "checkpoint")
	case isSubpath(path, "/statusz"):
		subresources = append(subresources, "statusz")
	case isSubpath(path, "/flagz"):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	return Attributes{Verb: verb, NodeName: nodeName, Subresources: subresources, Path: path}
}

// isSubpath reports whether path is prefix or lies under it ("/pods" and "/pods/x", not "/podsx").
func isSubpath(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
