// Package audit is the API server's audit log in Kubernetes' formats: a policy file
// (audit.k8s.io/v1 Policy, --audit-policy-file) decides per request at which level it is recorded
// (None, Metadata, Request, RequestResponse) and which stages are left out, and events
// (audit.k8s.io/v1 Event) are written one JSON object per line (--audit-log-path), so tools that
// read kube-apiserver's audit log read skiff's.
//
// The policy evaluation is pure; the HTTP layer builds events and hands them to a Writer. It does
// not import the HTTP layer.
package audit
