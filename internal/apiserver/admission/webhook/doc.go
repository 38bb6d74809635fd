// Package webhook is the MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission plugins:
// they read webhook configurations from informer caches over the API server's own store, decide
// which webhooks a request matches (rules, scope, namespace and object selectors, CEL match
// conditions), and call them with an AdmissionReview v1 over TLS, applying mutating webhooks'
// JSONPatch responses and honouring failurePolicy, timeoutSeconds, sideEffects on dry run and
// reinvocationPolicy.
//
// The matching is pure (match.go) and table-tested; the I/O (HTTP calls, namespace and endpoint
// lookups) stays in plugin.go and call.go. It must not import internal/cluster or reach etcd
// itself: objects come through the API server's Lookup and ListWatch.
package webhook
