package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const replicaLimitPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 3"
    messageExpression: "'replicas must be no greater than 3, got ' + string(object.spec.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit
spec:
  policyName: replica-limit
  validationActions: [Deny]
`

// TestAdmissionPolicy: kubectl apply of a Deployment over a ValidatingAdmissionPolicy's replica
// limit shows the policy's message; one within the limit is applied.
func TestAdmissionPolicy(t *testing.T) {
	c := newCluster(t, "--controllers=serviceaccount")
	c.stdin(replicaLimitPolicy, "apply", "-f", "-")
	mustContain(t, c.kubectl("get", "validatingadmissionpolicies"), "replica-limit", "VALIDATIONS")
	want := `ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request: replicas must be no greater than 3, got 5`
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlIn(deployment("5"), "apply", "-f", "-")
		if err == nil {
			c.kubectl("delete", "deployment", "web", "--wait=false")
			return fmt.Errorf("applied: %s", out)
		}
		if !strings.Contains(out, want) {
			return fmt.Errorf("kubectl said %q", out)
		}
		return nil
	})
	c.stdin(deployment("2"), "apply", "-f", "-")

	// The policy's expressions are type-checked against the Deployment schema: none warns. A
	// policy comparing replicas with a string, or reading a field Deployments do not have, gets a
	// warning for each in status.typeChecking.
	typeChecking := func(name string) string {
		t.Helper()
		var out string
		eventually(t, 30*time.Second, func() error {
			out = c.kubectl("get", "validatingadmissionpolicy", name, "-o", `jsonpath={.status.observedGeneration} {.status.typeChecking}`)
			if !strings.HasPrefix(out, "1 {") {
				return fmt.Errorf("status not type-checked yet: %q", out)
			}
			return nil
		})
		return out
	}
	if out := typeChecking("replica-limit"); strings.Contains(out, "expressionWarnings") {
		t.Errorf("warnings for a policy whose types agree: %s", out)
	}
	confused := strings.NewReplacer("name: replica-limit", "name: confused",
		`"object.spec.replicas <= 3"`, `"object.spec.replicas <= '3' && object.spec.maxRetries < 10"`).Replace(strings.Split(replicaLimitPolicy, "---")[0])
	c.stdin(confused, "apply", "-f", "-")
	mustContain(t, typeChecking("confused"), `"fieldRef":"spec.validations[0].expression"`, "apps/v1, Kind=Deployment",
		"found no matching overload for", "applied to '(int, string)'", "undefined field 'maxRetries'")
}

// secretReadersPolicy lets only users who may read a namespace's Secrets create ConfigMaps there:
// the expression asks the API server's authorizer (authorizer.group(...)...check(...)).
const secretReadersPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: secret-readers-only
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [configmaps]
  validations:
  - expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()"
    messageExpression: "request.userInfo.username + ' may not read secrets in ' + object.metadata.namespace + ': ' + authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').reason()"
  - expression: "authorizer.requestResource.check('create').allowed()"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: secret-readers-only
spec:
  policyName: secret-readers-only
  validationActions: [Deny]
`

// TestAdmissionPolicyAuthorizer: a ValidatingAdmissionPolicy that asks the authorizer. bob, who
// may create ConfigMaps but not read Secrets, is refused with the policy's message; once a Role
// lets him read Secrets his ConfigMap is created. The admin's is created all along.
func TestAdmissionPolicyAuthorizer(t *testing.T) {
	c := newCluster(t, "--controllers=serviceaccount")
	c.kubectl("create", "role", "cm-writer", "--verb=create", "--resource=configmaps")
	c.kubectl("create", "rolebinding", "bob-cm", "--role=cm-writer", "--user=bob")
	c.stdin(secretReadersPolicy, "apply", "-f", "-")
	want := `ValidatingAdmissionPolicy 'secret-readers-only' with binding 'secret-readers-only' denied request: bob may not read secrets in default`
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("--as=bob", "create", "configmap", "bobs")
		if err == nil {
			c.kubectl("delete", "configmap", "bobs")
			return fmt.Errorf("created: %s", out)
		}
		if !strings.Contains(out, want) {
			return fmt.Errorf("kubectl said %q", out)
		}
		return nil
	})
	c.kubectl("create", "configmap", "admins")
	c.kubectl("create", "role", "secret-reader", "--verb=get", "--resource=secrets")
	c.kubectl("create", "rolebinding", "bob-secrets", "--role=secret-reader", "--user=bob")
	eventually(t, 30*time.Second, func() error {
		if out, err := c.kubectlErr("--as=bob", "create", "configmap", "bobs"); err != nil {
			return fmt.Errorf("bob, now a secret reader: %s", out)
		}
		return nil
	})
}
