// Package flowcontrol declares flowcontrol.apiserver.k8s.io/v1 flowschemas and
// prioritylevelconfigurations (each with /status): Kubernetes' defaults and validation, and the
// mandatory and suggested configuration objects an API server creates at start. Classifying and
// queuing requests (API Priority and Fairness) is not here. It must not import the API server or
// storage; table printing lives in the printers package.
package flowcontrol
