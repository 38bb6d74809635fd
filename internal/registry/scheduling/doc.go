// Package scheduling declares scheduling.k8s.io/v1 priorityclasses: the preemptionPolicy default,
// reserved "system-" names, the user value ceiling and immutable value, plus the system classes the
// API server creates at start, which cannot be deleted (a DeleteValidator, as upstream refuses it in
// its PriorityClass storage). The single-globalDefault rule needs storage and is left to admission.
// It must not import the API server or storage.
package scheduling
