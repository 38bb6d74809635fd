package printers

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-sh/skiff/internal/registry"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenCase is one resource's table of representative objects, rendered to testdata/<file>.golden.
type goldenCase struct {
	file    string
	gr      schema.GroupResource
	objects []runtime.Object
}

func TestGoldenTables(t *testing.T) {
	for _, gc := range goldenCases() {
		t.Run(gc.file, func(t *testing.T) {
			p := ForResource(gc.gr)
			if p == nil {
				t.Fatalf("no printer for %s", gc.gr)
			}
			got := renderTable(t, p, gc.objects)
			path := filepath.Join("testdata", gc.file+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the printed table (run with -update if the change is intended)\n--- got:\n%s\n--- want:\n%s", path, got, want)
			}
		})
	}
}

// renderTable prints the column definitions (with the Go types seen in each column's cells) and
// the rows as `kubectl get -o wide` lays them out. It fails the test on a row whose cell count
// differs from the column count or whose cells are not the JSON-friendly types the Table carries.
func renderTable(t *testing.T, p *registry.TablePrinter, objects []runtime.Object) string {
	t.Helper()
	cellTypes := make([]map[string]bool, len(p.Columns))
	for i := range cellTypes {
		cellTypes[i] = map[string]bool{}
	}
	var rows [][]interface{}
	for _, obj := range objects {
		cells, err := p.Row(obj, testNow)
		if err != nil {
			t.Fatalf("print %T: %v", obj, err)
		}
		if len(cells) != len(p.Columns) {
			t.Fatalf("print %T: %d cells for %d columns", obj, len(cells), len(p.Columns))
		}
		for i, c := range cells {
			switch c.(type) {
			case string, int64, bool:
			default:
				t.Fatalf("column %q: cell %#v has type %T, want string, int64 or bool", p.Columns[i].Name, c, c)
			}
			cellTypes[i][fmt.Sprintf("%T", c)] = true
		}
		if _, err := json.Marshal(metav1.TableRow{Cells: cells}); err != nil {
			t.Fatalf("cells of %T do not marshal: %v", obj, err)
		}
		rows = append(rows, cells)
	}

	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 10, 4, 3, ' ', 0)
	fmt.Fprintln(w, "COLUMN\tTYPE\tFORMAT\tPRIORITY\tCELLS")
	for i, c := range p.Columns {
		types := make([]string, 0, len(cellTypes[i]))
		for typ := range cellTypes[i] {
			types = append(types, typ)
		}
		sort.Strings(types)
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", c.Name, c.Type, orDash(c.Format), c.Priority, strings.Join(types, ","))
	}
	w.Flush()
	buf.WriteString("\n")

	w = tabwriter.NewWriter(&buf, 10, 4, 3, ' ', 0)
	headers := make([]string, len(p.Columns))
	for i, c := range p.Columns {
		headers[i] = strings.ToUpper(c.Name)
	}
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, cells := range rows {
		texts := make([]string, len(cells))
		for i, c := range cells {
			texts[i] = fmt.Sprint(c)
		}
		fmt.Fprintln(w, strings.Join(texts, "\t"))
	}
	w.Flush()
	return buf.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func goldenCases() []goldenCase {
	core := func(r string) schema.GroupResource { return schema.GroupResource{Resource: r} }
	group := func(g, r string) schema.GroupResource { return schema.GroupResource{Group: g, Resource: r} }
	return append([]goldenCase{
		{"pods", core("pods"), goldenPods()},
		{"nodes", core("nodes"), goldenNodes()},
		{"namespaces", core("namespaces"), goldenNamespaces()},
		{"services", core("services"), goldenServices()},
		{"endpoints", core("endpoints"), goldenEndpoints()},
		{"configmaps", core("configmaps"), goldenConfigMaps()},
		{"secrets", core("secrets"), goldenSecrets()},
		{"serviceaccounts", core("serviceaccounts"), goldenServiceAccounts()},
		{"events", core("events"), goldenCoreEvents()},
		{"events.events.k8s.io", group("events.k8s.io", "events"), goldenEventsV1()},
		{"limitranges", core("limitranges"), goldenLimitRanges()},
		{"resourcequotas", core("resourcequotas"), goldenResourceQuotas()},
		{"replicationcontrollers", core("replicationcontrollers"), goldenReplicationControllers()},
		{"persistentvolumes", core("persistentvolumes"), goldenPersistentVolumes()},
		{"persistentvolumeclaims", core("persistentvolumeclaims"), goldenPersistentVolumeClaims()},
		{"deployments.apps", group("apps", "deployments"), goldenDeployments()},
		{"replicasets.apps", group("apps", "replicasets"), goldenReplicaSets()},
		{"statefulsets.apps", group("apps", "statefulsets"), goldenStatefulSets()},
		{"daemonsets.apps", group("apps", "daemonsets"), goldenDaemonSets()},
		{"controllerrevisions.apps", group("apps", "controllerrevisions"), goldenControllerRevisions()},
		{"jobs.batch", group("batch", "jobs"), goldenJobs()},
		{"cronjobs.batch", group("batch", "cronjobs"), goldenCronJobs()},
		{"leases.coordination.k8s.io", group("coordination.k8s.io", "leases"), goldenLeases()},
		{"certificatesigningrequests.certificates.k8s.io", group("certificates.k8s.io", "certificatesigningrequests"), goldenCSRs()},
		{"endpointslices.discovery.k8s.io", group("discovery.k8s.io", "endpointslices"), goldenEndpointSlices()},
		{"poddisruptionbudgets.policy", group("policy", "poddisruptionbudgets"), goldenPodDisruptionBudgets()},
		{"roles.rbac.authorization.k8s.io", group("rbac.authorization.k8s.io", "roles"), goldenRoles()},
		{"clusterroles.rbac.authorization.k8s.io", group("rbac.authorization.k8s.io", "clusterroles"), goldenClusterRoles()},
		{"rolebindings.rbac.authorization.k8s.io", group("rbac.authorization.k8s.io", "rolebindings"), goldenRoleBindings()},
		{"clusterrolebindings.rbac.authorization.k8s.io", group("rbac.authorization.k8s.io", "clusterrolebindings"), goldenClusterRoleBindings()},
		{"priorityclasses.scheduling.k8s.io", group("scheduling.k8s.io", "priorityclasses"), goldenPriorityClasses()},
	}, groupGoldenCases()...)
}

func goldenPods() []runtime.Object {
	return []runtime.Object{
		makePod("web-7d4b9c6f8-x2k4p").Containers("nginx").Phase(corev1.PodRunning).Created(26 * time.Hour).
			Statuses(running("nginx", true)).IP("10.244.1.12").Node("worker-1").Obj(),
		makePod("api-5f6d8b7c9-q8w7e").Containers("api", "metrics").Phase(corev1.PodRunning).Created(3*time.Hour).
			Statuses(restarted(waiting("api", "CrashLoopBackOff"), 5, 2*time.Minute), running("metrics", true)).
			IP("10.244.2.4", "fd00:10:244:2::4").Node("worker-2").Obj(),
		makePod("db-0").InitContainers("init-perms", "init-schema").Containers("postgres").Created(90*time.Second).
			InitStatuses(terminated("init-perms", "Completed", 0, 0), running("init-schema", false)).
			Statuses(waiting("postgres", "PodInitializing")).IP("10.244.1.30").Node("worker-1").Obj(),
		makePod("mesh-client").Sidecar("envoy").Containers("app").Phase(corev1.PodRunning).Created(40*time.Minute).
			InitStatuses(started(running("envoy", true))).Statuses(running("app", true)).
			Condition(corev1.PodInitialized, corev1.ConditionTrue, "").Condition(corev1.PodReady, corev1.ConditionTrue, "").
			ReadinessGates("example.com/registered").Condition("example.com/registered", corev1.ConditionTrue, "").
			IP("10.244.3.9").Node("worker-3").Obj(),
		makePod("backup-28861440-abcde").Containers("backup").Phase(corev1.PodSucceeded).Created(5 * time.Hour).
			Statuses(terminated("backup", "Completed", 0, 0)).Node("worker-2").Obj(),
		makePod("gated").Containers("app").Created(time.Minute).
			Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated).Obj(),
		makePod("preempting").Containers("app").Created(20 * time.Second).Nominated("worker-3").Obj(),
		makePod("old-web").Containers("nginx").Phase(corev1.PodRunning).Created(9 * 24 * time.Hour).
			Statuses(running("nginx", true)).IP("10.244.1.2").Node("worker-1").Deleting().Obj(),
	}
}

func goldenNodes() []runtime.Object {
	return []runtime.Object{
		makeNode("cp-1").Ready(corev1.ConditionTrue).Label("node-role.kubernetes.io/control-plane", "").
			Address(corev1.NodeInternalIP, "192.168.10.1").Info("v1.32.3", "Debian GNU/Linux 13 (trixie)", "6.12.22-amd64", "containerd://2.0.4").Obj(),
		makeNode("worker-1").Ready(corev1.ConditionTrue).Label("node-role.kubernetes.io/worker", "").
			Address(corev1.NodeInternalIP, "192.168.10.11").Address(corev1.NodeExternalIP, "203.0.113.11").
			Info("v1.32.3", "Debian GNU/Linux 13 (trixie)", "6.12.22-amd64", "containerd://2.0.4").Obj(),
		makeNode("worker-2").Ready(corev1.ConditionUnknown).Unschedulable().
			Address(corev1.NodeInternalIP, "192.168.10.12").Info("v1.31.7", "Ubuntu 24.04.2 LTS", "6.8.0-57-generic", "containerd://1.7.27").Obj(),
		makeNode("joining").Obj(),
	}
}

func goldenNamespaces() []runtime.Object {
	ns := func(name string, phase corev1.NamespacePhase, created time.Duration) runtime.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(created)}, Status: corev1.NamespaceStatus{Phase: phase}}
	}
	return []runtime.Object{
		ns("default", corev1.NamespaceActive, 30*24*time.Hour),
		ns("kube-system", corev1.NamespaceActive, 30*24*time.Hour),
		ns("scratch", corev1.NamespaceTerminating, 45*time.Second),
	}
}

func goldenServices() []runtime.Object {
	return []runtime.Object{
		makeService("kubernetes", corev1.ServiceTypeClusterIP).ClusterIP("10.96.0.1").Port(443, 0).Obj(),
		makeService("kube-dns", corev1.ServiceTypeClusterIP).ClusterIP("10.96.0.10").ProtocolPort(53, 0, corev1.ProtocolUDP).
			ProtocolPort(53, 0, corev1.ProtocolTCP).ProtocolPort(9153, 0, corev1.ProtocolTCP).Selector("k8s-app", "kube-dns").Obj(),
		makeService("web", corev1.ServiceTypeNodePort).ClusterIP("10.96.12.7").Port(80, 30080).Selector("app", "web").Obj(),
		makeService("shop", corev1.ServiceTypeLoadBalancer).ClusterIP("10.96.40.2").Port(443, 31443).Selector("app", "shop").Obj(),
		makeService("edge", corev1.ServiceTypeLoadBalancer).ClusterIP("10.96.40.3").Port(80, 31080).
			Ingress("", "edge-1234567890.lb.example.com").Ingress("203.0.113.50", "").Selector("app", "edge").Obj(),
		makeService("db-headless", corev1.ServiceTypeClusterIP).ClusterIP("None").Port(5432, 0).Selector("app", "db").Obj(),
		makeService("legacy-db", corev1.ServiceTypeExternalName).ExternalName("db.corp.example.com").Obj(),
	}
}

func goldenEndpoints() []runtime.Object {
	return []runtime.Object{
		&corev1.Endpoints{ObjectMeta: objectMeta("kubernetes", 30*24*time.Hour), Subsets: []corev1.EndpointSubset{
			{Addresses: endpointAddresses("192.168.10.1"), Ports: endpointPorts(6443)},
		}},
		&corev1.Endpoints{ObjectMeta: objectMeta("web", 2*time.Hour), Subsets: []corev1.EndpointSubset{
			{Addresses: endpointAddresses("10.244.1.12", "10.244.2.8", "10.244.3.3", "10.244.3.4"), Ports: endpointPorts(80)},
		}},
		&corev1.Endpoints{ObjectMeta: objectMeta("db-headless", time.Hour), Subsets: []corev1.EndpointSubset{
			{Addresses: endpointAddresses("10.244.1.30")},
		}},
		&corev1.Endpoints{ObjectMeta: objectMeta("no-backends", 5*time.Minute)},
	}
}

func goldenConfigMaps() []runtime.Object {
	return []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: objectMeta("kube-root-ca.crt", 30*24*time.Hour), Data: map[string]string{"ca.crt": "..."}},
		&corev1.ConfigMap{ObjectMeta: objectMeta("app-config", 3*time.Minute), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"logo.png": {0x89}}},
		&corev1.ConfigMap{ObjectMeta: objectMeta("empty", 10*time.Second)},
	}
}

func goldenSecrets() []runtime.Object {
	return []runtime.Object{
		&corev1.Secret{ObjectMeta: objectMeta("tls", 5*24*time.Hour), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
		&corev1.Secret{ObjectMeta: objectMeta("registry", time.Hour), Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": nil}},
		&corev1.Secret{ObjectMeta: objectMeta("mixed", time.Minute), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": nil}, StringData: map[string]string{"a": "x", "b": "y"}},
	}
}

func goldenServiceAccounts() []runtime.Object {
	return []runtime.Object{
		&corev1.ServiceAccount{ObjectMeta: objectMeta("default", 30*24*time.Hour)},
		&corev1.ServiceAccount{ObjectMeta: objectMeta("builder", time.Hour), Secrets: []corev1.ObjectReference{{Name: "builder-token"}}},
	}
}

func goldenCoreEvents() []runtime.Object {
	return []runtime.Object{
		&corev1.Event{
			ObjectMeta: objectMeta("web-7d4b9c6f8-x2k4p.1842", 10*time.Minute), Type: corev1.EventTypeNormal, Reason: "Scheduled",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-7d4b9c6f8-x2k4p"},
			Message:        "Successfully assigned default/web-7d4b9c6f8-x2k4p to worker-1",
			EventTime:      metav1.NewMicroTime(testNow.Add(-10 * time.Minute)), ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-cp-1",
		},
		&corev1.Event{
			ObjectMeta: objectMeta("api-5f6d8b7c9-q8w7e.1843", time.Hour), Type: corev1.EventTypeWarning, Reason: "BackOff",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "api-5f6d8b7c9-q8w7e", FieldPath: "spec.containers{api}"},
			Message:        "Back-off restarting failed container api in pod api-5f6d8b7c9-q8w7e_default(uid)",
			Source:         corev1.EventSource{Component: "kubelet", Host: "worker-2"},
			FirstTimestamp: ago(time.Hour), LastTimestamp: ago(2 * time.Minute), Count: 17,
		},
	}
}

func goldenEventsV1() []runtime.Object {
	return []runtime.Object{
		&eventsv1.Event{
			ObjectMeta: objectMeta("web.1844", 3*time.Minute), Type: corev1.EventTypeNormal, Reason: "ScalingReplicaSet",
			Regarding: corev1.ObjectReference{Kind: "Deployment", Name: "web"}, Note: "Scaled up replica set web-7d4b9c6f8 from 0 to 3",
			EventTime: metav1.NewMicroTime(testNow.Add(-3 * time.Minute)), ReportingController: "deployment-controller", ReportingInstance: "",
		},
		&eventsv1.Event{
			ObjectMeta: objectMeta("worker-2.1845", 2*time.Hour), Type: corev1.EventTypeWarning, Reason: "NodeNotReady",
			Regarding: corev1.ObjectReference{Kind: "Node", Name: "worker-2"}, Note: "Node worker-2 status is now: NodeNotReady",
			EventTime: metav1.NewMicroTime(testNow.Add(-2 * time.Hour)), ReportingController: "node-controller", ReportingInstance: "cp-1",
			Series: &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(testNow.Add(-4 * time.Minute))},
		},
	}
}

func goldenLimitRanges() []runtime.Object {
	return []runtime.Object{&corev1.LimitRange{ObjectMeta: objectMeta("defaults", 0)}}
}

func goldenResourceQuotas() []runtime.Object {
	return []runtime.Object{
		&corev1.ResourceQuota{ObjectMeta: objectMeta("compute", 6*time.Hour), Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{
				"requests.cpu": resource.MustParse("4"), "requests.memory": resource.MustParse("8Gi"), "pods": resource.MustParse("20"),
				"limits.cpu": resource.MustParse("8"), "limits.memory": resource.MustParse("16Gi"),
			},
			Used: corev1.ResourceList{"requests.cpu": resource.MustParse("1500m"), "pods": resource.MustParse("7"), "limits.memory": resource.MustParse("3Gi")},
		}},
		&corev1.ResourceQuota{ObjectMeta: objectMeta("new", 5*time.Second)},
	}
}

func goldenPersistentVolumes() []runtime.Object {
	fs, block := corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock
	return []runtime.Object{
		&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-data", CreationTimestamp: ago(48 * time.Hour)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOnce},
				ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: "data-db-0"},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "local", VolumeMode: &fs,
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
		},
		&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-old", CreationTimestamp: ago(20 * 24 * time.Hour), Annotations: map[string]string{storageClassAnnotation: "legacy"}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("500Mi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadOnlyMany},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "ignored", VolumeMode: &block,
				VolumeAttributesClassName: strPtr("gold"),
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeFailed, Reason: "ProvisioningFailed"},
		},
		&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-going", CreationTimestamp: ago(time.Hour), DeletionTimestamp: agoPtr(time.Second)},
			Status:     corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased},
		},
	}
}

func goldenPersistentVolumeClaims() []runtime.Object {
	fs := corev1.PersistentVolumeFilesystem
	return []runtime.Object{
		&corev1.PersistentVolumeClaim{
			ObjectMeta: objectMeta("data-db-0", 47*time.Hour),
			Spec: corev1.PersistentVolumeClaimSpec{
				VolumeName: "pv-data", StorageClassName: strPtr("local"), VolumeMode: &fs,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
			},
			Status: corev1.PersistentVolumeClaimStatus{
				Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			},
		},
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "scratch", Namespace: "default", CreationTimestamp: ago(30 * time.Second), Annotations: map[string]string{storageClassAnnotation: "fast"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: strPtr("ignored"), VolumeAttributesClassName: strPtr("silver"),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		},
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "leaving", Namespace: "default", CreationTimestamp: ago(time.Hour), DeletionTimestamp: agoPtr(time.Second)},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		},
	}
}

func podTemplate(containers ...string) corev1.PodTemplateSpec {
	var spec corev1.PodSpec
	for _, c := range containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: c, Image: "registry.local/" + c + ":1.2"})
	}
	return corev1.PodTemplateSpec{Spec: spec}
}

func int32Ptr(i int32) *int32 { return &i }

func selector(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func goldenDeployments() []runtime.Object {
	return []runtime.Object{
		&appsv1.Deployment{
			ObjectMeta: objectMeta("web", 26*time.Hour),
			Spec:       appsv1.DeploymentSpec{Replicas: int32Ptr(3), Selector: selector("app", "web"), Template: podTemplate("nginx")},
			Status:     appsv1.DeploymentStatus{ReadyReplicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3},
		},
		&appsv1.Deployment{
			ObjectMeta: objectMeta("api", 3*time.Hour),
			Spec: appsv1.DeploymentSpec{Replicas: int32Ptr(2), Template: podTemplate("api", "metrics"), Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "api"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"backend"}}},
			}},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1, UpdatedReplicas: 2, AvailableReplicas: 1},
		},
		&appsv1.Deployment{ObjectMeta: objectMeta("unselected", time.Minute), Spec: appsv1.DeploymentSpec{Template: podTemplate("app")}},
	}
}

func goldenReplicaSets() []runtime.Object {
	return []runtime.Object{
		&appsv1.ReplicaSet{
			ObjectMeta: objectMeta("web-7d4b9c6f8", 26*time.Hour),
			Spec:       appsv1.ReplicaSetSpec{Replicas: int32Ptr(3), Selector: selector("app", "web", "pod-template-hash", "7d4b9c6f8"), Template: podTemplate("nginx")},
			Status:     appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2},
		},
		&appsv1.ReplicaSet{
			ObjectMeta: objectMeta("web-6c5d8f7b4", 40*24*time.Hour),
			Spec:       appsv1.ReplicaSetSpec{Replicas: int32Ptr(0), Selector: selector("app", "web", "pod-template-hash", "6c5d8f7b4"), Template: podTemplate("nginx")},
		},
	}
}

func goldenReplicationControllers() []runtime.Object {
	tmpl := podTemplate("nginx", "sidecar")
	return []runtime.Object{
		&corev1.ReplicationController{
			ObjectMeta: objectMeta("web", 26*time.Hour),
			Spec:       corev1.ReplicationControllerSpec{Replicas: int32Ptr(3), Selector: map[string]string{"app": "web", "tier": "front"}, Template: &tmpl},
			Status:     corev1.ReplicationControllerStatus{Replicas: 3, ReadyReplicas: 2},
		},
		// No template: the containers cells are empty, as kubectl prints them.
		&corev1.ReplicationController{ObjectMeta: objectMeta("bare", time.Minute), Spec: corev1.ReplicationControllerSpec{Replicas: int32Ptr(0)}},
	}
}

func goldenStatefulSets() []runtime.Object {
	return []runtime.Object{
		&appsv1.StatefulSet{
			ObjectMeta: objectMeta("db", 47*time.Hour),
			Spec:       appsv1.StatefulSetSpec{Replicas: int32Ptr(3), Selector: selector("app", "db"), Template: podTemplate("postgres", "exporter")},
			Status:     appsv1.StatefulSetStatus{ReadyReplicas: 2, Replicas: 3},
		},
	}
}

func goldenDaemonSets() []runtime.Object {
	withNodeSelector := podTemplate("proxy")
	withNodeSelector.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	return []runtime.Object{
		&appsv1.DaemonSet{
			ObjectMeta: objectMeta("kube-proxy", 30*24*time.Hour),
			Spec:       appsv1.DaemonSetSpec{Selector: selector("k8s-app", "kube-proxy"), Template: withNodeSelector},
			Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, CurrentNumberScheduled: 4, NumberReady: 3, UpdatedNumberScheduled: 4, NumberAvailable: 3},
		},
		&appsv1.DaemonSet{
			ObjectMeta: objectMeta("log-agent", 2*time.Minute),
			Spec:       appsv1.DaemonSetSpec{Selector: selector("app", "log-agent"), Template: podTemplate("fluent-bit")},
		},
	}
}

func goldenControllerRevisions() []runtime.Object {
	owned := func(name string, revision int64, apiVersion, kind, owner string) runtime.Object {
		yes := true
		m := objectMeta(name, time.Hour)
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, Controller: &yes}}
		return &appsv1.ControllerRevision{ObjectMeta: m, Revision: revision}
	}
	return []runtime.Object{
		owned("kube-proxy-5b9f7d6c4", 1, "apps/v1", "DaemonSet", "kube-proxy"),
		owned("db-6d8f9c7b5", 3, "apps/v1", "StatefulSet", "db"),
		owned("core-owned", 2, "v1", "Pod", "holder"),
		&appsv1.ControllerRevision{ObjectMeta: objectMeta("orphan", 2*time.Hour), Revision: 7},
	}
}

func goldenJobs() []runtime.Object {
	return []runtime.Object{
		makeJob("backup-28861440").Completions(1).Succeeded(1).Started(5*time.Hour).Finished(5*time.Hour-42*time.Second).
			Condition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue).Condition(batchv1.JobComplete, corev1.ConditionTrue).Obj(),
		makeJob("migrate").Completions(5).Succeeded(2).Started(3 * time.Minute).Obj(),
		makeJob("flaky").Completions(1).Started(20*time.Minute).Condition(batchv1.JobFailed, corev1.ConditionTrue).Obj(),
		makeJob("paused").Completions(1).Condition(batchv1.JobSuspended, corev1.ConditionTrue).Obj(),
		makeJob("queue-workers").Parallelism(4).Succeeded(0).Started(time.Minute).Obj(),
	}
}

func goldenCronJobs() []runtime.Object {
	no, yes := false, true
	berlin := "Europe/Berlin"
	jobTemplate := batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate("backup")}}
	return []runtime.Object{
		&batchv1.CronJob{
			ObjectMeta: objectMeta("backup", 30*24*time.Hour),
			Spec:       batchv1.CronJobSpec{Schedule: "0 2 * * *", Suspend: &no, JobTemplate: jobTemplate},
			Status:     batchv1.CronJobStatus{LastScheduleTime: agoPtr(10 * time.Hour), Active: []corev1.ObjectReference{{Name: "backup-28861440"}}},
		},
		&batchv1.CronJob{
			ObjectMeta: objectMeta("report", 2*time.Hour),
			Spec:       batchv1.CronJobSpec{Schedule: "*/15 * * * *", TimeZone: &berlin, Suspend: &yes, JobTemplate: jobTemplate},
		},
		&batchv1.CronJob{ObjectMeta: objectMeta("undefaulted", time.Minute), Spec: batchv1.CronJobSpec{Schedule: "@hourly"}},
	}
}

func goldenLeases() []runtime.Object {
	holder := "cp-1_5f0c7a2e-8d1b-4c3f-9a6e-2b7d1e0f4a93"
	return []runtime.Object{
		&coordinationv1.Lease{ObjectMeta: objectMeta("kube-scheduler", 30*24*time.Hour), Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
		&coordinationv1.Lease{ObjectMeta: objectMeta("unheld", time.Minute)},
	}
}

func goldenEndpointSlices() []runtime.Object {
	port := func(p int32) discoveryv1.EndpointPort { return discoveryv1.EndpointPort{Port: &p} }
	return []runtime.Object{
		&discoveryv1.EndpointSlice{
			ObjectMeta: objectMeta("web-x7k2p", 2*time.Hour), AddressType: discoveryv1.AddressTypeIPv4,
			Ports:     []discoveryv1.EndpointPort{port(80)},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.12"}}, {Addresses: []string{"10.244.2.8"}}, {Addresses: []string{"10.244.3.3"}}, {Addresses: []string{"10.244.3.4"}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta: objectMeta("web-v6-a1b2c", 2*time.Hour), AddressType: discoveryv1.AddressTypeIPv6,
			Ports:     []discoveryv1.EndpointPort{port(80), port(443)},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00:10:244:1::c"}}},
		},
		&discoveryv1.EndpointSlice{ObjectMeta: objectMeta("empty-q9w8e", time.Minute), AddressType: discoveryv1.AddressTypeIPv4},
	}
}

func goldenPodDisruptionBudgets() []runtime.Object {
	two, half := intstr.FromInt32(2), intstr.FromString("50%")
	return []runtime.Object{
		&policyv1.PodDisruptionBudget{ObjectMeta: objectMeta("web", 26*time.Hour), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
		&policyv1.PodDisruptionBudget{ObjectMeta: objectMeta("db", time.Hour), Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &half}},
	}
}

func goldenRoles() []runtime.Object {
	return []runtime.Object{&rbacv1.Role{ObjectMeta: objectMeta("pod-reader", 0)}}
}

func goldenClusterRoles() []runtime.Object {
	return []runtime.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view", CreationTimestamp: ago(30 * 24 * time.Hour)}}}
}

func goldenSubjects() []rbacv1.Subject {
	return []rbacv1.Subject{
		{Kind: rbacv1.UserKind, Name: "alice"},
		{Kind: rbacv1.GroupKind, Name: "devs"},
		{Kind: rbacv1.UserKind, Name: "bob"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "builder"},
		{Kind: "Robot", Name: "ignored"},
	}
}

func goldenRoleBindings() []runtime.Object {
	return []runtime.Object{
		&rbacv1.RoleBinding{ObjectMeta: objectMeta("read-pods", time.Hour), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"}, Subjects: goldenSubjects()},
		&rbacv1.RoleBinding{ObjectMeta: objectMeta("nobody", time.Minute), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}},
	}
}

func goldenClusterRoleBindings() []runtime.Object {
	return []runtime.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin", CreationTimestamp: ago(30 * 24 * time.Hour)},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:masters"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "everyone", CreationTimestamp: ago(time.Hour)},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: goldenSubjects()},
	}
}

func goldenPriorityClasses() []runtime.Object {
	never := corev1.PreemptNever
	lower := corev1.PreemptLowerPriority
	return []runtime.Object{
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical", CreationTimestamp: ago(30 * 24 * time.Hour)}, Value: 2000001000, PreemptionPolicy: &lower},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch-low", CreationTimestamp: ago(time.Hour)}, Value: -10, GlobalDefault: true, PreemptionPolicy: &never},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "undefaulted", CreationTimestamp: ago(time.Minute)}, Value: 100},
	}
}
