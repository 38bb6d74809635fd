package e2e

import (
	"fmt"
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
	waitFor("class features", []string{"gatewayclass", "skiff", "-o", `jsonpath={.status.supportedFeatures[*].name}`}, "Gateway HTTPRoute ReferenceGrant")
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
