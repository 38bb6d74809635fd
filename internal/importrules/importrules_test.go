package importrules

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/skiff-sh/skiff/"

// apiClientForbidden is what a component that reaches the cluster only through client-go must never
// link: skiff's server side and any upstream component's implementation.
var apiClientForbidden = []string{
	module + "internal/apiserver",
	module + "internal/storage",
	module + "internal/etcd",
	module + "internal/registry",
	module + "internal/cluster",
	"go.etcd.io/etcd/",
	"k8s.io/apiserver/",
	"k8s.io/kubernetes/",
}

// upstreamComponents may not be linked by anything in skiff: we write the components ourselves.
var upstreamComponents = []string{"k8s.io/apiserver/", "k8s.io/kubernetes/", "k8s.io/kube-proxy/", "k8s.io/controller-manager/", "k8s.io/kube-scheduler/"}

// rules: the packages matching pattern (less those in skip) and their dependencies must not include
// any forbidden path. A forbidden entry ending in "/" forbids that tree; otherwise it forbids the
// package and its subpackages; allowed entries are exceptions to forbidden ones. exact entries
// forbid that one package only.
var rules = []struct {
	name      string
	pattern   string
	skip      []string
	forbidden []string
	allowed   []string
	exact     []string
}{
	{name: "the scheduler is an API client", pattern: "./internal/scheduler/...", forbidden: apiClientForbidden},
	{name: "controllers are API clients", pattern: "./internal/controller/...", forbidden: apiClientForbidden},
	{name: "the kubelet is an API client", pattern: "./internal/kubelet/...", forbidden: apiClientForbidden},
	{name: "the node-local load balancer is an API client", pattern: "./internal/lb/...", forbidden: apiClientForbidden},
	{name: "cluster DNS is an API client and no upstream DNS server", pattern: "./internal/dns/...",
		forbidden: append(slices.Clone(apiClientForbidden), module+"internal/kubelet", module+"internal/controller", "github.com/coredns/")},
	{name: "the service proxy is an API client", pattern: "./internal/proxy/...", forbidden: apiClientForbidden},
	{name: "the network policy agent is an API client", pattern: "./internal/netpol/...", forbidden: apiClientForbidden},
	{name: "the manifests directory is an API client", pattern: "./internal/manifests/...", forbidden: apiClientForbidden},
	// The Lease campaign is client-go's leader election and nothing of skiff's: the components that
	// campaign import it, never the other way round.
	{name: "leader election is a client library", pattern: "./internal/leader/...",
		forbidden: append(slices.Clone(apiClientForbidden), module+"internal/"), allowed: []string{module + "internal/leader"}},
	// Snapshots are etcd's business (its client and snapshot API), recorded through the API as a
	// client: never the server, storage or the node's assembly.
	{name: "etcd snapshots reach etcd and the API, not the server", pattern: "./internal/etcdsnapshot/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/storage", module + "internal/registry", module + "internal/cluster"}},
	{name: "the pod network agent is an API client", pattern: "./internal/podnet/...", forbidden: apiClientForbidden},
	{name: "cloud providers are API clients", pattern: "./internal/cloudprovider/...", forbidden: apiClientForbidden},
	{name: "simulated nodes are API clients", pattern: "./internal/simnode/...", forbidden: apiClientForbidden},
	{name: "storage never reaches up into the API server or registry", pattern: "./internal/storage/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/registry", module + "internal/cluster"}},
	// The registry's strategies see neither the HTTP layer, the store nor storage; they read the
	// request's user from internal/request, which sits beside the server, not in it.
	// registry/builtin composes the built-in resources with their storage codecs and discovery, so
	// it alone is let through.
	{name: "strategies are independent of the server", pattern: "./internal/registry/...", skip: []string{module + "internal/registry/builtin"},
		forbidden: []string{module + "internal/apiserver", module + "internal/storage", module + "internal/cluster"}},
	{name: "the registry never imports the HTTP layer", pattern: "./internal/registry/...",
		forbidden: []string{module + "internal/cluster"}, exact: []string{module + "internal/apiserver"}},
	{name: "the store sits below the HTTP layer", pattern: "./internal/apiserver/store/...",
		forbidden: []string{module + "internal/cluster"}, exact: []string{module + "internal/apiserver"}},
	// Authorizers decide from a request's attributes and informer caches: no HTTP layer, storage or
	// registry (internal/request carries the attributes).
	{name: "authorizers are independent of the server", pattern: "./internal/authz/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/storage", module + "internal/registry", module + "internal/cluster", module + "internal/etcd"}},
	// API Priority and Fairness decides from a request's attributes and its own informers; the HTTP
	// layer applies its decisions (internal/request carries the attributes).
	{name: "flow control is independent of the server", pattern: "./internal/apiserver/flowcontrol/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/storage", module + "internal/registry", module + "internal/cluster", module + "internal/etcd"},
		allowed:   []string{module + "internal/apiserver/flowcontrol"}},
	// Admission plugins reach objects through the API server's Lookup and ListWatch, never etcd; they
	// see the server only through internal/apiserver/admission (attributes, Lookup, Source), never
	// its HTTP layer.
	{name: "admission plugins sit on the API server, not on etcd", pattern: "./internal/apiserver/admission/...",
		forbidden: []string{module + "internal/cluster", module + "internal/storage/etcd3", module + "internal/etcd"},
		exact:     []string{module + "internal/apiserver"}},
	// The in-process list-watch reads the API server's watch cache through an interface: never etcd,
	// never the HTTP layer or the node assembly.
	{name: "the in-process list-watch sits on the watch cache", pattern: "./internal/apiserver/local/...",
		forbidden: []string{module + "internal/cluster", module + "internal/storage/etcd3", module + "internal/etcd", "go.etcd.io/etcd/"},
		exact:     []string{module + "internal/apiserver"}},
	// The admission CEL environment is pure: the registry compiles with it, so it must not see the server.
	{name: "the CEL environment is pure", pattern: "./internal/cel/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/storage", module + "internal/registry", module + "internal/cluster", "go.etcd.io/etcd/"}},
	// Joining is tokens, an authenticator over a Secret lookup, and the node's client-go side: the
	// request's user type (internal/request) is all it sees of the server.
	{name: "joining is independent of the server", pattern: "./internal/join/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/storage", module + "internal/registry", module + "internal/cluster", module + "internal/etcd", "go.etcd.io/etcd/"}},
	// What the server learned about a request (user, attributes, the Authorizer interface) is read
	// by the server, the registry, the authorizers and joining alike: a leaf on API types.
	{name: "the request vocabulary is a leaf", pattern: "./internal/request/...",
		forbidden: []string{module + "internal/", "k8s.io/client-go/", "go.etcd.io/etcd/"}, allowed: []string{module + "internal/request"}},
	// The etcd membership wire types and their client are for API clients (status, node remove, join).
	{name: "etcd membership types are an API client's", pattern: "./internal/etcdapi/...", forbidden: apiClientForbidden},
	{name: "the etcd membership endpoints sit on etcd, not on the server", pattern: "./internal/etcd/membershipapi/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/storage", module + "internal/registry", module + "internal/cluster"}},
	{name: "status and node remove are API clients", pattern: "./internal/nodeadmin/...", forbidden: apiClientForbidden},
	// The dashboard serves files and proxies HTTP; it reads the cluster only from the browser.
	{name: "the dashboard is an API client", pattern: "./internal/dashboard/...", forbidden: apiClientForbidden},
	// Quota measures are shared by the ResourceQuota admission plugin and the resourcequota
	// controller: pure, on API types only.
	{name: "quota measures are pure", pattern: "./internal/quota/...",
		forbidden: []string{module + "internal/", "k8s.io/client-go/", "go.etcd.io/etcd/"}, allowed: []string{module + "internal/quota"}},
	{name: "the API server does not assemble nodes", pattern: "./internal/apiserver/...", forbidden: []string{module + "internal/cluster"}},
	// The resource metrics scraper is storage for the API server's generic handlers: it implements
	// storage.Interface and reads nodes and pods through client-go listers, never the HTTP layer,
	// the registry, etcd or the kubelet's code.
	{name: "the resource metrics scraper sits below the server", pattern: "./internal/metricsserver/...",
		forbidden: []string{module + "internal/apiserver", module + "internal/registry", module + "internal/cluster", module + "internal/etcd", module + "internal/kubelet", "go.etcd.io/etcd/"}},
	// The hand-declared apiextensions.k8s.io types are types only: everything may import them.
	{name: "API types are leaves", pattern: "./internal/apis/...",
		forbidden: []string{module + "internal/"}, allowed: []string{module + "internal/apis"}},
	// skiff may not depend on k8s.io/apiextensions-apiserver (its types are declared in internal/apis).
	{name: "no apiextensions-apiserver", pattern: "./...", forbidden: []string{"k8s.io/apiextensions-apiserver"}},
	{name: "no upstream component anywhere", pattern: "./...", forbidden: upstreamComponents},
	// The CNI plugin runs from a package initializer of the skiff binary before the rest of it
	// initializes (internal/cni/cniexec): it links netlink and the standard library, nothing of
	// skiff's components or Kubernetes.
	{name: "the CNI plugin is light", pattern: "./internal/cni/...",
		forbidden: []string{module + "internal/", "k8s.io/", "go.etcd.io/", "google.golang.org/"}, allowed: []string{module + "internal/cni"}},
	// The version constants are imported by the server, the kubelet and simulated nodes alike: a
	// leaf that links nothing of skiff's and no client.
	{name: "the version is a leaf", pattern: "./internal/version/...",
		forbidden: []string{module + "internal/", "k8s.io/client-go/", "go.etcd.io/etcd/"}, allowed: []string{module + "internal/version"}},
	// The API server liveness rule is read by status (an API client) and the server's rotation alike.
	{name: "the identity Lease liveness rule is a leaf", pattern: "./internal/identitylease/...",
		forbidden: []string{module + "internal/", "k8s.io/client-go/", "go.etcd.io/etcd/"}, allowed: []string{module + "internal/identitylease"}},
	// The WebSocket-to-SPDY stream translator is shared by the API server and the kubelet: it sees
	// neither of them, no storage and no node assembly (client-go carries the SPDY side).
	{name: "the pod stream translator sits below the server and the kubelet", pattern: "./internal/podstream/...",
		forbidden: []string{module + "internal/", "go.etcd.io/etcd/"}, allowed: []string{module + "internal/podstream", module + "internal/queryparam"}},
	// Network-namespace test plumbing shared by the proxy's and the pod network's tests.
	{name: "the netns test helpers are a leaf", pattern: "./internal/netnstest/...",
		forbidden: []string{module + "internal/", "k8s.io/", "go.etcd.io/etcd/"}, allowed: []string{module + "internal/netnstest"}},
	// Install and uninstall work on the host, not on a running node: they link the host-side
	// pieces (the node's containerd layout, the proxy's, policy agent's and pod network's cleanup,
	// the data dir lock), never the node's assembly, the API server, storage or etcd.
	{name: "host install and uninstall do not assemble nodes", pattern: "./internal/install/...", forbidden: apiClientForbidden},
	// The data dir lock is taken by the node's assembly and checked by uninstall: a leaf.
	{name: "the data dir lock is a leaf", pattern: "./internal/nodelock/...",
		forbidden: []string{module + "internal/", "k8s.io/", "go.etcd.io/etcd/"}, allowed: []string{module + "internal/nodelock"}},
	// hack/ holds developer tools (the conformance harness's junit summary): the standard library only.
	{name: "hack tools link nothing of skiff or Kubernetes", pattern: "./hack/...", forbidden: []string{module + "internal/", "k8s.io/"}},
}

func TestImportRules(t *testing.T) {
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			var packages []string
			for _, pkg := range goList(t, rule.pattern) {
				if !slices.Contains(rule.skip, pkg) {
					packages = append(packages, pkg)
				}
			}
			for _, dep := range goList(t, append([]string{"-deps", "-test=false"}, packages...)...) {
				if slices.ContainsFunc(rule.allowed, func(a string) bool { return within(dep, a) }) {
					continue
				}
				for _, f := range rule.forbidden {
					if within(dep, f) {
						t.Errorf("%s depends on %s", rule.pattern, dep)
					}
				}
				for _, f := range rule.exact {
					if dep == f {
						t.Errorf("%s depends on %s", rule.pattern, dep)
					}
				}
			}
		})
	}
}

// TestOnlyCommandsAssembleNodes: internal/cluster is the one place that composes a node, and only
// the command (and tests that drive it) may import it.
func TestOnlyCommandsAssembleNodes(t *testing.T) {
	for _, line := range goList(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := fields[0]
		if strings.HasPrefix(pkg, module+"cmd/") || strings.HasPrefix(pkg, module+"test/") {
			continue
		}
		for _, imp := range fields[1:] {
			if imp == module+"internal/cluster" {
				t.Errorf("%s imports internal/cluster; only cmd/ may", pkg)
			}
		}
	}
}

func within(pkg, forbidden string) bool {
	if strings.HasSuffix(forbidden, "/") {
		return strings.HasPrefix(pkg, forbidden) || pkg == strings.TrimSuffix(forbidden, "/")
	}
	return pkg == forbidden || strings.HasPrefix(pkg, forbidden+"/")
}

// goList runs `go list` from the module root; a failure fails the test, since a rule that cannot be
// checked is not kept.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if f := strings.Fields(string(out)); args[0] != "-f" {
		return f
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
