// Package admissionregistration declares admissionregistration.k8s.io/v1: mutating and validating
// webhook configurations, ValidatingAdmissionPolicies (with /status) and their bindings, with
// Kubernetes' v1 defaults and its validation rules and wording.
//
// It decides nothing about admission itself: the webhook and policy admission plugins read these
// objects. Like every strategy it must not import the API server's HTTP layer or storage.
package admissionregistration
