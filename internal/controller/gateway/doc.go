// Package gateway is the control side of the Gateway API (issue 29): it accepts the
// GatewayClasses whose controllerName is skiff.sh/gateway-controller, and for the Gateways of
// those classes and the HTTPRoutes attached to them it writes the status the specification
// defines: the class's Accepted condition and supportedFeatures; each Gateway's Accepted,
// Programmed and ResolvedRefs conditions, its addresses (one of its own from the address pool
// its class's parametersRef names, else the data-plane nodes, picked as the local load-balancer
// provider picks them) and per listener its supportedKinds, attachedRoutes
// and Accepted, Programmed, ResolvedRefs and Conflicted conditions; each route's parents, with
// Accepted and ResolvedRefs. ReferenceGrants permit cross-namespace backendRefs and
// certificateRefs.
//
// On each data-plane node RunTable decides the same way, elects the node holding each Gateway's
// own address (Holder) and builds the data plane's table (Translate).
//
// The decision is pure: Decide turns a Snapshot (the objects, the namespaces' labels, the
// nodes) into a Plan (the status every object should have). Controller is the thin I/O around
// it: informers in, status writes out (only where the status differs). It must not write
// anything but status, and must not serve traffic: the data plane reads the same objects.
package gateway
