// Package tokencleaner deletes expired bootstrap token Secrets (type bootstrap.kubernetes.io/token
// in kube-system), as kube-controller-manager's tokencleaner does, so an expired join token is gone
// and not merely refused.
//
// It owns nothing but those deletions: it never creates or edits tokens, and it reaches the cluster
// only through client-go. Whether a Secret is due is the pure function Due, tested with fixed times.
package tokencleaner
