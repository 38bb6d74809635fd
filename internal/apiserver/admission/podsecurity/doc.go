// Package podsecurity is the PodSecurity admission plugin: the Pod Security Standards' privileged,
// baseline and restricted levels, chosen per namespace by the pod-security.kubernetes.io/{enforce,
// audit,warn}[-version] labels over configured defaults (upstream's PodSecurityConfiguration), with
// exemptions by namespace, user and runtime class. Enforce refuses pods with upstream's message;
// warn adds Warning headers; audit records audit annotations on the admission attributes. Workload
// objects' pod templates are warned and audited, never refused, and tightening a namespace's
// enforce label warns about its existing pods.
//
// The checks (Evaluate) and the decision (Decide) are pure and table-tested; the plugin reads the
// namespace and applies the decision. It must not call out of the API server, and it evaluates
// every version label with the latest checks (the version is reported, not used to pick checks).
package podsecurity
