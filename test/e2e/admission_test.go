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
}
