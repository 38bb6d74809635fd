// Package ingress serves networking.k8s.io/v1 Ingress with skiff's built-in HTTP data plane
// (internal/ingress/dataplane).
//
// Translate is the pure translation of the Ingresses of skiff's IngressClasses, with the
// Services, EndpointSlices and TLS Secrets they name, into a routes.Table; Served is the one rule
// saying which Ingresses are skiff's (ingressClassName naming a class of controller
// skiff.sh/ingress, or unset while that class is the default, or no class is default at all);
// PlanClass decides whether the `skiff` IngressClass must be created; LoadBalancerStatus is the
// status.loadBalancer every served Ingress gets (the addresses of the nodes labelled as running
// the data plane). NodeController runs on every worker: it watches those objects and hands each new table
// to the data plane. StatusController runs in the control plane, leader-elected: it creates the
// class and writes the status.
//
// It must not reach the cluster other than through client-go, program anything on the node
// (the data plane serves), or keep package-level mutable state.
package ingress
