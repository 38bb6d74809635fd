package apiserver

import (
	"context"
	"net/http"
	"strings"
	"sync"
)

// Kubernetes' names for the start-up steps an API server reports in /healthz, /livez and /readyz
// (its post-start hooks), each mapped to the skiff step that does that work; the step marks itself
// done through StartStepDone (the cluster package for the steps it runs, this package for
// aggregation's and the service repair's first passes). Tools and e2e.test read the names.
const (
	StepAdmissionInitializer   = "start-apiserver-admission-initializer"        // admission plugins' caches synced
	StepStartInformers         = "generic-apiserver-start-informers"            // the server's own informers synced
	StepAPIExtensionsInformers = "start-apiextensions-informers"                // CustomResourceDefinitions read
	StepAPIExtensionsCtrls     = "start-apiextensions-controllers"              // their names and conditions kept
	StepCRDInformerSynced      = "crd-informer-synced"                          // every established one served
	StepBootstrapController    = "bootstrap-controller"                         // default namespace and kubernetes Service
	StepSystemNamespaces       = "start-system-namespaces-controller"           // kube-system, kube-public, kube-node-lease
	StepServiceIPRepair        = "start-service-ip-repair-controllers"          // first repair pass of the allocation bitmaps
	StepSystemPriorityClasses  = "scheduling/bootstrap-system-priority-classes" // system-node/cluster-critical
	StepAuthenticationInfo     = "start-cluster-authentication-info-controller" // extension-apiserver-authentication
	StepAggregatorInformers    = "start-kube-aggregator-informers"              // APIService informers synced
	StepAPIServiceRegistration = "apiservice-registration-controller"           // APIServices routed
	StepLocalAvailable         = "apiservice-status-local-available-controller"
	StepRemoteAvailable        = "apiservice-status-remote-available-controller"
	StepAutoregistration       = "kube-apiserver-autoregistration" // local APIServices written
	StepAPIServiceOpenAPI      = "apiservice-openapi-controller"   // aggregated OpenAPI served
	StepRBACBootstrapRoles     = "rbac/bootstrap-roles"            // default roles and bindings
)

// StartSteps are every start-up step and check a node's API server declares before it starts,
// in the order they are reported.
func StartSteps() []string {
	return []string{CheckInformerSync, StepAdmissionInitializer, StepStartInformers, StepAPIExtensionsInformers,
		StepAPIExtensionsCtrls, StepCRDInformerSynced, StepBootstrapController, StepRBACBootstrapRoles,
		StepSystemNamespaces, StepServiceIPRepair, StepSystemPriorityClasses, StepAuthenticationInfo,
		StepAggregatorInformers, StepAPIServiceRegistration, StepLocalAvailable, StepRemoteAvailable,
		StepAutoregistration, CheckAutoregisterCompletion, StepAPIServiceOpenAPI}
}

// Checks that are not start-up steps but reported beside them under their own names.
const (
	// CheckInformerSync is /readyz's "informer-sync": the server's informers have synced.
	CheckInformerSync = "informer-sync"
	// CheckAutoregisterCompletion is "autoregister-completion": every local APIService written.
	CheckAutoregisterCompletion = "autoregister-completion"
)

// startSteps are the named start-up steps and whether each has finished; the health endpoints fail
// until all have. Safe for concurrent use.
type startSteps struct {
	mu    sync.Mutex
	order []string
	done  map[string]bool
}

// DeclareStartSteps registers steps that are not finished yet (again: no change).
func (s *Server) DeclareStartSteps(names ...string) {
	st := &s.steps
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done == nil {
		st.done = map[string]bool{}
	}
	for _, n := range names {
		if _, ok := st.done[n]; !ok {
			st.order = append(st.order, n)
			st.done[n] = false
		}
	}
}

// StartStepDone marks steps finished (declaring them if they were not).
func (s *Server) StartStepDone(names ...string) {
	s.DeclareStartSteps(names...)
	st := &s.steps
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, n := range names {
		if !st.done[n] {
			// At debug level the log says which step a not-yet-ready server waits for.
			s.log.Debug("start step done", "step", n)
		}
		st.done[n] = true
	}
}

// stepChecks are the steps as health checks, in declaration order: the two plain checks under
// their own names, the others as poststarthook/<name>; readyz adds informer-sync.
func (st *startSteps) checks(readyz bool) []healthCheck {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []healthCheck
	for _, n := range st.order {
		switch n {
		case CheckInformerSync:
			if readyz {
				out = append(out, healthCheck{n, st.done[n]})
			}
		case CheckAutoregisterCompletion:
			out = append(out, healthCheck{n, st.done[n]})
		default:
			out = append(out, healthCheck{"poststarthook/" + n, st.done[n]})
		}
	}
	return out
}

// serveHealth answers /healthz, /livez and /readyz as kube-apiserver does: ping, log, etcd (the
// storage check; /livez and /healthz included, as upstream's), and the start-up steps; "ok" when
// every check passes, else 500 naming the failed ones (their reasons only with ?verbose, the
// storage's withheld otherwise); ?verbose lists every check. /readyz answers 503.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request, endpoint string) {
	_, verbose := r.URL.Query()["verbose"]
	var storage error
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyzTimeout)
		defer cancel()
		storage = s.cfg.Ready(ctx)
	}
	// skiff logs through slog straight to its output, with no flush daemon that could stall as
	// klog's can, which upstream's "log" check watches: nothing to fail here.
	checks := append([]healthCheck{{"ping", true}, {"log", true}, {"etcd", storage == nil}}, s.steps.checks(endpoint == "readyz")...)
	s.slis.observe(endpoint, checks...)
	failed := false
	var b strings.Builder
	for _, c := range checks {
		switch {
		case c.ok:
			if verbose {
				b.WriteString("[+]" + c.name + " ok\n")
			}
		default:
			failed = true
			reason := "reason withheld"
			if verbose {
				reason = "not finished"
				if c.name == "etcd" {
					reason = storage.Error()
				}
			}
			b.WriteString("[-]" + c.name + " failed: " + reason + "\n")
		}
	}
	if storage != nil {
		// The reason (etcd quorum lost, etcd unreachable) is for the operator reading ?verbose.
		s.log.Warn(endpoint+": storage not ready", "err", storage)
	}
	code := http.StatusOK
	switch {
	case failed && endpoint == "readyz":
		code = http.StatusServiceUnavailable
	case failed:
		code = http.StatusInternalServerError
	}
	if !failed && !verbose {
		writePlain(w, code, "ok")
		return
	}
	verdict := " check passed"
	if failed {
		verdict = " check failed"
	}
	writePlain(w, code, b.String()+endpoint+verdict)
}
