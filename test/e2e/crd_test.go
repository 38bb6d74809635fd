package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const crontabCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Spec, type: string, description: The cron spec defining the interval a CronJob is run, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, description: The number of jobs launched by the CronJob, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: CronTab runs an image on a schedule.
        properties:
          spec:
            type: object
            description: The desired schedule.
            properties:
              cronSpec: {type: string, description: When to run.}
              image: {type: string}
              replicas: {type: integer, default: 1}
`

const crontab = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: NAME
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  replicas: REPLICAS
`

func cronTab(name, replicas string) string {
	return strings.NewReplacer("NAME", name, "REPLICAS", replicas).Replace(crontab)
}

// TestCustomResourceDefinitions is issue 11's CRD workflow with kubectl: apply a definition, wait
// for Established, work with its objects, then delete it and see them go.
func TestCustomResourceDefinitions(t *testing.T) {
	c := newCluster(t, "--controllers=serviceaccount")

	mustContain(t, c.stdin(crontabCRD, "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created")
	c.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd/crontabs.stable.example.com")
	mustContain(t, c.kubectl("get", "crds"), "crontabs.stable.example.com")
	// Re-applying a changed definition (kubectl's three-way patch of the definition) updates it.
	changed := strings.Replace(crontabCRD, "image: {type: string}", "image: {type: string, description: The image to run.}", 1)
	mustContain(t, c.stdin(changed, "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com configured")
	mustContain(t, c.kubectl("get", "crd", "crontabs.stable.example.com", "-o", "jsonpath={.metadata.generation}"), "2")

	// Discovery is refreshed by kubectl's cache on a miss, so the new kind is found at once.
	eventually(t, 10*time.Second, func() error {
		out, err := c.kubectlIn(cronTab("daily", "2"), "apply", "-f", "-")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	c.stdin(cronTab("hourly", "3"), "create", "-f", "-")
	// Client-side apply of a changed object (a merge patch for custom resources).
	mustContain(t, c.stdin(cronTab("daily", "4"), "apply", "-f", "-"), "crontab.stable.example.com/daily configured")
	mustContain(t, c.kubectl("api-resources", "--api-group=stable.example.com"), "crontabs", "ct", "stable.example.com/v1", "true", "CronTab")
	// A watch sends the existing objects first; kubectl ends it at the request timeout.
	out, _ := c.kubectlErr("get", "crontabs", "--watch", "--request-timeout=2s")
	mustContain(t, out, "daily", "hourly")

	out = c.kubectl("get", "crontabs")
	mustContain(t, out, "NAME", "SPEC", "REPLICAS", "AGE", "daily", "* * * * */5", "hourly")
	mustContain(t, c.kubectl("get", "ct", "hourly", "-o", "jsonpath={.spec.replicas}"), "3")
	mustContain(t, c.kubectl("get", "all"), "crontab.stable.example.com/daily")
	mustContain(t, c.kubectl("get", "crontabs", "-o", "json"), `"kind": "CronTab"`, `"name": "hourly"`, `"replicas": 3`)
	mustContain(t, c.kubectl("get", "crontabs", "--field-selector", "metadata.name=daily", "-o", "name"), "crontab.stable.example.com/daily")

	// A field of the wrong type is refused with the schema's message.
	out, err := c.kubectlIn(cronTab("broken", `"many"`), "apply", "-f", "-")
	if err == nil {
		t.Fatalf("invalid crontab accepted:\n%s", out)
	}
	mustContain(t, out, `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`)

	// Client-side documentation comes from the published schema.
	eventually(t, 10*time.Second, func() error {
		out, err := c.kubectlErr("explain", "crontabs.spec")
		if err != nil || !strings.Contains(out, "cronSpec") || !strings.Contains(out, "The desired schedule.") {
			return fmt.Errorf("explain: %v: %s", err, out)
		}
		return nil
	})

	c.kubectl("patch", "crontab", "daily", "--type=merge", "-p", `{"spec":{"replicas":5}}`)
	mustContain(t, c.kubectl("get", "crontab", "daily", "-o", "jsonpath={.spec.replicas}/{.metadata.generation}"), "5/3")

	// A restarted server serves the custom resources from its first request on.
	c.stop()
	c.start()
	mustContain(t, c.kubectl("get", "crontab", "daily", "-o", "jsonpath={.spec.replicas}"), "5")

	mustContain(t, c.kubectl("delete", "crd", "crontabs.stable.example.com"), "deleted")
	out, err = c.kubectlErr("get", "crontabs.stable.example.com")
	if err == nil {
		t.Fatalf("crontabs still served after their definition was deleted:\n%s", out)
	}
	// skiff's own definitions (the Gateway API's) stay; the deleted one is gone from the list.
	mustNotContain(t, c.kubectl("get", "crds"), "crontabs.stable.example.com")

	// A definition of the same name starts empty: the old objects were deleted with it.
	c.stdin(crontabCRD, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd/crontabs.stable.example.com")
	eventually(t, 10*time.Second, func() error {
		out, err := c.kubectlErr("get", "crontabs", "-A")
		if err != nil || !strings.Contains(out, "No resources found") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// TestCustomResourcesGoWithTheirNamespace: the namespace controller finds custom resources through
// discovery and deletes them (with the metadata client, which custom resources answer in JSON)
// before the namespace goes.
func TestCustomResourcesGoWithTheirNamespace(t *testing.T) {
	c := newCluster(t, "--controllers=serviceaccount,namespace")
	c.stdin(crontabCRD, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd/crontabs.stable.example.com")
	c.kubectl("create", "namespace", "team")
	eventually(t, 10*time.Second, func() error {
		out, err := c.kubectlIn(cronTab("nightly", "1"), "apply", "-n", "team", "-f", "-")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	c.kubectl("delete", "namespace", "team", "--wait=false")
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("get", "namespace", "team")
		if err == nil || !strings.Contains(out, "NotFound") {
			return fmt.Errorf("namespace still there: %s", out)
		}
		return nil
	})
	out, _ := c.kubectlErr("get", "crontabs", "-A")
	mustContain(t, out, "No resources found")
}
