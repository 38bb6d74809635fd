// Package priority is Kubernetes' Priority admission plugin: a new pod's priorityClassName resolves
// to spec.priority and spec.preemptionPolicy from its PriorityClass (the globalDefault class when
// the pod names none, else priority 0 and PreemptLowerPriority). A missing class, or a priority or
// preemption policy given in the pod that differs from the class's, is Forbidden with upstream's
// wording.
package priority
