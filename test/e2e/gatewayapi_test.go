package e2e

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const gatewayAPIObjects = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: skiff
spec:
  controllerName: skiff.sh/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: web
  namespace: default
spec:
  gatewayClassName: skiff
  infrastructure:
    annotations:
      example.com/team: web
  listeners:
  - name: http
    protocol: HTTP
    port: 80
    allowedRoutes:
      namespaces:
        from: All
  - name: https
    protocol: HTTPS
    port: 443
    hostname: "*.example.com"
    tls:
      certificateRefs:
      - name: absent-tls
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  ports:
  - port: 80
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: web
  namespace: default
spec:
  parentRefs:
  - name: web
    sectionName: http
  hostnames: ["www.example.com"]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /}
      method: GET
    backendRefs:
    - {name: web, port: 80, weight: 90}
    - {name: absent, port: 80, weight: 10}
`

// TestGatewayAPIControlSide is issue 29's control side as a user meets it: the Gateway API's
// definitions are there with nothing installed (their CEL rules, some over map keys, compile in
// skiff's API server), a Gateway and an HTTPRoute apply, the definitions' validation refuses what
// it should, and the gateway controller writes the statuses the specification names.
func TestGatewayAPIControlSide(t *testing.T) {
	c := newCluster(t, "--controllers=gateway")

	// Created in the background after the start: ten large schemas take a while on a loaded host.
	eventually(t, 3*time.Minute, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Established", "--timeout=2s",
			"crd/gatewayclasses.gateway.networking.k8s.io", "crd/gateways.gateway.networking.k8s.io",
			"crd/httproutes.gateway.networking.k8s.io", "crd/referencegrants.gateway.networking.k8s.io")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	mustContain(t, c.kubectl("api-resources", "--api-group=gateway.networking.k8s.io"), "gatewayclasses", "gateways", "httproutes", "referencegrants", "grpcroutes")
	mustContain(t, c.kubectl("get", "crd", "gateways.gateway.networking.k8s.io", "-o", "jsonpath={.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version}"), "v1.6.3")

	eventually(t, 20*time.Second, func() error {
		out, err := c.kubectlIn(gatewayAPIObjects, "apply", "-f", "-")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	dup := `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"dup","namespace":"default"},
	  "spec":{"gatewayClassName":"skiff","listeners":[{"name":"a","protocol":"HTTP","port":80},{"name":"a","protocol":"HTTP","port":81}]}}`
	out, err := c.kubectlIn(dup, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "Listener name must be unique within the Gateway") {
		t.Fatalf("a Gateway with two listeners named a: %v: %s", err, out)
	}

	waitFor := func(what string, args []string, want string) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			got, err := c.kubectlErr(append([]string{"get", "-n", "default"}, args...)...)
			if err != nil || got != want {
				return fmt.Errorf("%s: %q (%v), want %q", what, got, err, want)
			}
			return nil
		})
	}
	waitFor("class Accepted", []string{"gatewayclass", "skiff", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].status}`}, "True")
	eventually(t, 60*time.Second, func() error {
		got, err := c.kubectlErr("get", "gatewayclass", "skiff", "-o", `jsonpath={.status.supportedFeatures[*].name}`)
		for _, f := range []string{"Gateway", "HTTPRoute", "ReferenceGrant", "GRPCRoute"} {
			if err != nil || !slices.Contains(strings.Fields(got), f) {
				return fmt.Errorf("class features %q (%v), want %s among them", got, err, f)
			}
		}
		return nil
	})
	waitFor("gateway Accepted", []string{"gateway", "web", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].reason}`}, "Accepted")
	// No worker runs the data plane here: no address, so not programmed.
	waitFor("gateway Programmed", []string{"gateway", "web", "-o", `jsonpath={.status.conditions[?(@.type=="Programmed")].reason}`}, "AddressNotAssigned")
	waitFor("http listener", []string{"gateway", "web", "-o", `jsonpath={.status.listeners[?(@.name=="http")].attachedRoutes}`}, "1")
	waitFor("https listener", []string{"gateway", "web", "-o", `jsonpath={.status.listeners[?(@.name=="https")].conditions[?(@.type=="ResolvedRefs")].reason}`}, "InvalidCertificateRef")
	waitFor("route Accepted", []string{"httproute", "web", "-o", `jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].status}`}, "True")
	waitFor("route ResolvedRefs", []string{"httproute", "web", "-o", `jsonpath={.status.parents[0].conditions[?(@.type=="ResolvedRefs")].reason}`}, "BackendNotFound")
	waitFor("route controller", []string{"httproute", "web", "-o", `jsonpath={.status.parents[0].controllerName}`}, "skiff.sh/gateway-controller")

	// The missing Service appears: the route's references resolve.
	mustContain(t, c.kubectl("create", "service", "clusterip", "absent", "--tcp=80:80"), "created")
	waitFor("route ResolvedRefs after the Service", []string{"httproute", "web", "-o", `jsonpath={.status.parents[0].conditions[?(@.type=="ResolvedRefs")].reason}`}, "ResolvedRefs")
}

// gatewayPoolObjects: the class skiff with an address pool, two Gateways listening on port 80
// and an HTTPRoute on each, to the Services a and b (ingressManifest's).
const gatewayPoolObjects = `apiVersion: v1
kind: ConfigMap
metadata:
  name: gateway-pool
  namespace: kube-system
data:
  addresses: POOL
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: skiff
spec:
  controllerName: skiff.sh/gateway-controller
  parametersRef: {group: "", kind: ConfigMap, name: gateway-pool, namespace: kube-system}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ga, namespace: default}
spec:
  gatewayClassName: skiff
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gb, namespace: default}
spec:
  gatewayClassName: skiff
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ra, namespace: default}
spec:
  parentRefs: [{name: ga}]
  rules: [{backendRefs: [{name: a, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: rb, namespace: default}
spec:
  parentRefs: [{name: gb}]
  rules: [{backendRefs: [{name: b, port: 80}]}]
`

// TestGatewayAddressPool: two Gateways listening on port 80 of one node, of a class whose
// parametersRef names an address pool, each get an address of the pool; the node puts both on
// its interface and curl to each reaches only its own route's pods. A Gateway deleted gives its
// address back: it leaves the interface. (The pool's addresses join the test host's veth: they
// are this machine's own.)
func TestGatewayAddressPool(t *testing.T) {
	requireRuntime(t)
	addr := testHostAddress(t)
	n, err := rand.Int(rand.Reader, big.NewInt(250*120))
	if err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf("172.30.%d.%d", 1+n.Int64()/120, 2*(1+n.Int64()%120))
	second := fmt.Sprintf("172.30.%d.%d", 1+n.Int64()/120, 2*(1+n.Int64()%120)+1)
	c := newWorkerCluster(t, "--bind-address", addr, "--ingress-http-port", strconv.Itoa(freePort(t)), "--ingress-https-port", "0")
	for _, app := range []string{"a", "b"} {
		c.stdin(strings.ReplaceAll(ingressManifest, "APP", app), "apply", "-f", "-")
	}
	eventually(t, 3*time.Minute, func() error {
		out, err := c.kubectlIn(strings.ReplaceAll(gatewayPoolObjects, "POOL", first+"-"+second), "apply", "-f", "-")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	addressOf := map[string]string{}
	for _, gw := range []string{"ga", "gb"} {
		eventually(t, 60*time.Second, func() error {
			out, err := c.kubectlErr("get", "gateway", gw, "-o", `jsonpath={.status.addresses[*].value} {.status.conditions[?(@.type=="Programmed")].status}`)
			a, programmed, _ := strings.Cut(out, " ")
			if err != nil || (a != first && a != second) || programmed != "True" {
				return fmt.Errorf("gateway %s: %q %v, want an address of %s-%s, programmed", gw, out, err, first, second)
			}
			addressOf[gw] = a
			return nil
		})
	}
	if addressOf["ga"] == addressOf["gb"] {
		t.Fatalf("both Gateways have %s", addressOf["ga"])
	}
	for _, app := range []string{"a", "b"} {
		eventually(t, 180*time.Second, func() error {
			out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", "app="+app, "--timeout=2s")
			if err != nil || strings.Count(out, "condition met") < 2 {
				return errString(out)
			}
			return nil
		})
	}
	for gw, app := range map[string]string{"ga": "app-a ", "gb": "app-b "} {
		eventually(t, 60*time.Second, func() error {
			body, verbose, err := curlIngress("http", "any.test", 80, addressOf[gw], "/dev/null")
			if err != nil || !strings.HasPrefix(body, app) {
				return fmt.Errorf("curl gateway %s at %s: %q %v\n%s", gw, addressOf[gw], body, err, verbose)
			}
			return nil
		})
	}
	onLink := func() string {
		out, _ := exec.Command("ip", "-4", "-o", "addr", "show").CombinedOutput()
		return string(out)
	}
	if out := onLink(); !strings.Contains(out, " "+first+"/32") || !strings.Contains(out, " "+second+"/32") {
		t.Fatalf("the Gateways' addresses are not on the node's interface:\n%s", out)
	}
	c.kubectl("delete", "gateway", "ga")
	eventually(t, 60*time.Second, func() error {
		if strings.Contains(onLink(), " "+addressOf["ga"]+"/32") {
			return fmt.Errorf("%s still on an interface after its Gateway was deleted", addressOf["ga"])
		}
		return nil
	})
	body, verbose, err := curlIngress("http", "any.test", 80, addressOf["gb"], "/dev/null")
	if err != nil || !strings.HasPrefix(body, "app-b ") {
		t.Fatalf("gateway gb after ga was deleted: %q %v\n%s", body, err, verbose)
	}
}
