package printers

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNodeStatusAndRoles(t *testing.T) {
	tests := []struct {
		name       string
		node       *corev1.Node
		wantStatus string
		wantRoles  string
	}{
		{"ready", makeNode("n").Ready(corev1.ConditionTrue).Obj(), "Ready", "<none>"},
		{"not ready", makeNode("n").Ready(corev1.ConditionFalse).Obj(), "NotReady", "<none>"},
		{"ready unknown is NotReady", makeNode("n").Ready(corev1.ConditionUnknown).Obj(), "NotReady", "<none>"},
		{"no Ready condition yet", makeNode("n").Condition(corev1.NodeMemoryPressure, corev1.ConditionFalse).Obj(), "Unknown", "<none>"},
		{"the last Ready condition wins", makeNode("n").Ready(corev1.ConditionFalse).Ready(corev1.ConditionTrue).Obj(), "Ready", "<none>"},
		{"cordoned", makeNode("n").Ready(corev1.ConditionTrue).Unschedulable().Obj(), "Ready,SchedulingDisabled", "<none>"},
		{"cordoned without status", makeNode("n").Unschedulable().Obj(), "Unknown,SchedulingDisabled", "<none>"},
		{
			"roles from label keys, sorted",
			makeNode("n").Ready(corev1.ConditionTrue).
				Label("node-role.kubernetes.io/worker", "").Label("node-role.kubernetes.io/control-plane", "").Obj(),
			"Ready", "control-plane,worker",
		},
		{
			"legacy role label value, deduplicated",
			makeNode("n").Ready(corev1.ConditionTrue).
				Label("kubernetes.io/role", "master").Label("node-role.kubernetes.io/master", "true").Obj(),
			"Ready", "master",
		},
		{
			"empty role names are ignored",
			makeNode("n").Ready(corev1.ConditionTrue).
				Label("node-role.kubernetes.io/", "").Label("kubernetes.io/role", "").Label("kubernetes.io/os", "linux").Obj(),
			"Ready", "<none>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := rowOf(t, schema.GroupResource{Resource: "nodes"}, tt.node)
			if cells[1] != tt.wantStatus {
				t.Errorf("STATUS = %q, want %q", cells[1], tt.wantStatus)
			}
			if cells[2] != tt.wantRoles {
				t.Errorf("ROLES = %q, want %q", cells[2], tt.wantRoles)
			}
		})
	}
}

func TestNodeWideCells(t *testing.T) {
	bare := rowOf(t, schema.GroupResource{Resource: "nodes"}, makeNode("n").Obj())
	wantBare := []interface{}{"n", "Unknown", "<none>", "3d", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}
	assertCells(t, bare, wantBare)

	full := rowOf(t, schema.GroupResource{Resource: "nodes"}, makeNode("n").Ready(corev1.ConditionTrue).
		Address(corev1.NodeHostName, "n").Address(corev1.NodeInternalIP, "192.168.1.10").Address(corev1.NodeInternalIP, "192.168.1.11").
		Address(corev1.NodeExternalIP, "203.0.113.10").
		Info("v1.32.0", "Debian GNU/Linux 13 (trixie)", "6.12.0-amd64", "containerd://2.1.0").Obj())
	wantFull := []interface{}{"n", "Ready", "<none>", "3d", "v1.32.0", "192.168.1.10", "203.0.113.10", "Debian GNU/Linux 13 (trixie)", "6.12.0-amd64", "containerd://2.1.0"}
	assertCells(t, full, wantFull)
}

func TestServiceCells(t *testing.T) {
	tests := []struct {
		name         string
		svc          *corev1.Service
		wantIP       string
		wantExternal string
		wantPorts    string
	}{
		{
			name:   "cluster IP",
			svc:    makeService("s", corev1.ServiceTypeClusterIP).ClusterIP("10.96.0.10").Port(80, 0).Port(443, 0).Obj(),
			wantIP: "10.96.0.10", wantExternal: "<none>", wantPorts: "80/TCP,443/TCP",
		},
		{
			name:   "cluster IP with external IPs",
			svc:    makeService("s", corev1.ServiceTypeClusterIP).ClusterIP("10.96.0.10").ExternalIPs("198.51.100.1", "198.51.100.2").Port(80, 0).Obj(),
			wantIP: "10.96.0.10", wantExternal: "198.51.100.1,198.51.100.2", wantPorts: "80/TCP",
		},
		{
			name:   "headless without ports",
			svc:    makeService("s", corev1.ServiceTypeClusterIP).ClusterIP("None").Obj(),
			wantIP: "None", wantExternal: "<none>", wantPorts: "<none>",
		},
		{
			name:   "no cluster IP at all",
			svc:    makeService("s", corev1.ServiceTypeClusterIP).Port(53, 0).Obj(),
			wantIP: "<none>", wantExternal: "<none>", wantPorts: "53/TCP",
		},
		{
			name:   "dual stack shows the primary IP",
			svc:    makeService("s", corev1.ServiceTypeClusterIP).ClusterIP("10.96.0.11", "fd00:10:96::11").ProtocolPort(53, 0, corev1.ProtocolUDP).Obj(),
			wantIP: "10.96.0.11", wantExternal: "<none>", wantPorts: "53/UDP",
		},
		{
			name:   "node port",
			svc:    makeService("s", corev1.ServiceTypeNodePort).ClusterIP("10.96.0.12").Port(80, 30080).ProtocolPort(53, 30053, corev1.ProtocolUDP).Obj(),
			wantIP: "10.96.0.12", wantExternal: "<none>", wantPorts: "80:30080/TCP,53:30053/UDP",
		},
		{
			name:   "load balancer pending",
			svc:    makeService("s", corev1.ServiceTypeLoadBalancer).ClusterIP("10.96.0.13").Port(80, 31000).Obj(),
			wantIP: "10.96.0.13", wantExternal: "<pending>", wantPorts: "80:31000/TCP",
		},
		{
			name: "load balancer ingress sorted, deduplicated, not clipped",
			svc: makeService("s", corev1.ServiceTypeLoadBalancer).ClusterIP("10.96.0.13").Port(80, 31000).
				Ingress("", "a-very-long-load-balancer-name.elb.example.com").Ingress("203.0.113.7", "ignored.example.com").Ingress("203.0.113.7", "").Obj(),
			wantIP: "10.96.0.13", wantExternal: "203.0.113.7,a-very-long-load-balancer-name.elb.example.com", wantPorts: "80:31000/TCP",
		},
		{
			name: "load balancer ingress then external IPs",
			svc: makeService("s", corev1.ServiceTypeLoadBalancer).ClusterIP("10.96.0.13").Port(80, 31000).
				Ingress("203.0.113.7", "").ExternalIPs("198.51.100.1").Obj(),
			wantIP: "10.96.0.13", wantExternal: "203.0.113.7,198.51.100.1", wantPorts: "80:31000/TCP",
		},
		{
			name: "load balancer with only external IPs is not pending",
			svc: makeService("s", corev1.ServiceTypeLoadBalancer).ClusterIP("10.96.0.13").Port(80, 31000).
				ExternalIPs("198.51.100.1").Obj(),
			wantIP: "10.96.0.13", wantExternal: "198.51.100.1", wantPorts: "80:31000/TCP",
		},
		{
			name:   "external name",
			svc:    makeService("s", corev1.ServiceTypeExternalName).ExternalName("db.example.com").Obj(),
			wantIP: "<none>", wantExternal: "db.example.com", wantPorts: "<none>",
		},
		{
			name:   "unset type",
			svc:    makeService("s", "").ClusterIP("10.96.0.14").Port(80, 0).Obj(),
			wantIP: "10.96.0.14", wantExternal: "<unknown>", wantPorts: "80/TCP",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := rowOf(t, schema.GroupResource{Resource: "services"}, tt.svc)
			if cells[2] != tt.wantIP {
				t.Errorf("CLUSTER-IP = %q, want %q", cells[2], tt.wantIP)
			}
			if cells[3] != tt.wantExternal {
				t.Errorf("EXTERNAL-IP = %q, want %q", cells[3], tt.wantExternal)
			}
			if cells[4] != tt.wantPorts {
				t.Errorf("PORT(S) = %q, want %q", cells[4], tt.wantPorts)
			}
		})
	}
}

func TestServiceSelector(t *testing.T) {
	none := rowOf(t, schema.GroupResource{Resource: "services"}, makeService("s", corev1.ServiceTypeClusterIP).Obj())
	if none[6] != "<none>" {
		t.Errorf("SELECTOR = %q, want <none>", none[6])
	}
	some := rowOf(t, schema.GroupResource{Resource: "services"}, makeService("s", corev1.ServiceTypeClusterIP).Selector("tier", "web").Selector("app", "shop").Obj())
	if some[6] != "app=shop,tier=web" {
		t.Errorf("SELECTOR = %q, want app=shop,tier=web", some[6])
	}
}

func TestJobCells(t *testing.T) {
	tests := []struct {
		name            string
		job             *batchv1.Job
		wantStatus      string
		wantCompletions string
		wantDuration    string
	}{
		{
			name:       "not started",
			job:        makeJob("j").Completions(1).Obj(),
			wantStatus: "Running", wantCompletions: "0/1", wantDuration: "",
		},
		{
			name:       "running measures duration until now",
			job:        makeJob("j").Completions(3).Succeeded(1).Started(90 * time.Second).Obj(),
			wantStatus: "Running", wantCompletions: "1/3", wantDuration: "90s",
		},
		{
			name: "complete measures start to completion",
			job: makeJob("j").Completions(1).Succeeded(1).Started(10*time.Minute).Finished(7*time.Minute).
				Condition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue).Condition(batchv1.JobComplete, corev1.ConditionTrue).Obj(),
			wantStatus: "Complete", wantCompletions: "1/1", wantDuration: "3m",
		},
		{
			name: "failed",
			job: makeJob("j").Completions(1).Started(5*time.Minute).
				Condition(batchv1.JobFailureTarget, corev1.ConditionTrue).Condition(batchv1.JobFailed, corev1.ConditionTrue).Obj(),
			wantStatus: "Failed", wantCompletions: "0/1", wantDuration: "5m",
		},
		{
			name: "failure target before the job is marked failed",
			job: makeJob("j").Completions(1).Started(5*time.Minute).
				Condition(batchv1.JobFailureTarget, corev1.ConditionTrue).Obj(),
			wantStatus: "FailureTarget", wantCompletions: "0/1", wantDuration: "5m",
		},
		{
			name:       "suspended",
			job:        makeJob("j").Completions(2).Condition(batchv1.JobSuspended, corev1.ConditionTrue).Obj(),
			wantStatus: "Suspended", wantCompletions: "0/2", wantDuration: "",
		},
		{
			name:       "a resumed job (Suspended=False) runs",
			job:        makeJob("j").Completions(2).Started(time.Minute).Condition(batchv1.JobSuspended, corev1.ConditionFalse).Obj(),
			wantStatus: "Running", wantCompletions: "0/2", wantDuration: "60s",
		},
		{
			name:       "terminating",
			job:        makeJob("j").Completions(1).Started(time.Minute).Condition(batchv1.JobSuspended, corev1.ConditionTrue).Deleting().Obj(),
			wantStatus: "Terminating", wantCompletions: "0/1", wantDuration: "60s",
		},
		{
			name: "a complete job being deleted stays Complete",
			job: makeJob("j").Completions(1).Succeeded(1).Started(2*time.Minute).Finished(time.Minute).
				Condition(batchv1.JobComplete, corev1.ConditionTrue).Deleting().Obj(),
			wantStatus: "Complete", wantCompletions: "1/1", wantDuration: "60s",
		},
		{
			name:       "work queue with parallelism",
			job:        makeJob("j").Parallelism(3).Succeeded(1).Obj(),
			wantStatus: "Running", wantCompletions: "1/1 of 3", wantDuration: "",
		},
		{
			name:       "work queue without parallelism",
			job:        makeJob("j").Parallelism(1).Obj(),
			wantStatus: "Running", wantCompletions: "0/1", wantDuration: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := rowOf(t, schema.GroupResource{Group: "batch", Resource: "jobs"}, tt.job)
			if cells[1] != tt.wantStatus {
				t.Errorf("STATUS = %q, want %q", cells[1], tt.wantStatus)
			}
			if cells[2] != tt.wantCompletions {
				t.Errorf("COMPLETIONS = %q, want %q", cells[2], tt.wantCompletions)
			}
			if cells[3] != tt.wantDuration {
				t.Errorf("DURATION = %q, want %q", cells[3], tt.wantDuration)
			}
		})
	}
}

func endpointAddresses(ips ...string) []corev1.EndpointAddress {
	out := make([]corev1.EndpointAddress, len(ips))
	for i, ip := range ips {
		out[i] = corev1.EndpointAddress{IP: ip}
	}
	return out
}

func endpointPorts(ports ...int32) []corev1.EndpointPort {
	out := make([]corev1.EndpointPort, len(ports))
	for i, p := range ports {
		out[i] = corev1.EndpointPort{Port: p, Protocol: corev1.ProtocolTCP}
	}
	return out
}

func TestEndpointsCell(t *testing.T) {
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{"no subsets", nil, "<none>"},
		{"subset without addresses", []corev1.EndpointSubset{{Ports: endpointPorts(80)}}, ""},
		{"one port", []corev1.EndpointSubset{{Addresses: endpointAddresses("10.0.0.1", "10.0.0.2"), Ports: endpointPorts(80)}}, "10.0.0.1:80,10.0.0.2:80"},
		{"exactly three", []corev1.EndpointSubset{{Addresses: endpointAddresses("10.0.0.1", "10.0.0.2", "10.0.0.3"), Ports: endpointPorts(80)}}, "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80"},
		{
			"each port of each address, truncated",
			[]corev1.EndpointSubset{{Addresses: endpointAddresses("10.0.0.1", "10.0.0.2"), Ports: endpointPorts(80, 443)}},
			"10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
		},
		{
			"counted across subsets",
			[]corev1.EndpointSubset{
				{Addresses: endpointAddresses("10.0.0.1", "10.0.0.2"), Ports: endpointPorts(80)},
				{Addresses: endpointAddresses("10.0.1.1", "10.0.1.2", "10.0.1.3"), Ports: endpointPorts(8080)},
			},
			"10.0.0.1:80,10.0.0.2:80,10.0.1.1:8080 + 2 more...",
		},
		{"headless without ports lists bare IPs", []corev1.EndpointSubset{{Addresses: endpointAddresses("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")}}, "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."},
		{"IPv6 in brackets", []corev1.EndpointSubset{{Addresses: endpointAddresses("fd00::1"), Ports: endpointPorts(53)}}, "[fd00::1]:53"},
		{
			"not-ready addresses are not listed",
			[]corev1.EndpointSubset{{Addresses: endpointAddresses("10.0.0.1"), NotReadyAddresses: endpointAddresses("10.0.0.9"), Ports: endpointPorts(80)}},
			"10.0.0.1:80",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{ObjectMeta: objectMeta("web", time.Minute), Subsets: tt.subsets}
			cells := rowOf(t, schema.GroupResource{Resource: "endpoints"}, ep)
			if cells[1] != tt.want {
				t.Errorf("ENDPOINTS = %q, want %q", cells[1], tt.want)
			}
		})
	}
}

func TestEndpointSliceCells(t *testing.T) {
	port := func(p int32) discoveryv1.EndpointPort { return discoveryv1.EndpointPort{Port: &p} }
	named := discoveryv1.EndpointPort{Name: strPtr("dns")}
	tests := []struct {
		name          string
		ports         []discoveryv1.EndpointPort
		endpoints     []discoveryv1.Endpoint
		wantPorts     string
		wantEndpoints string
	}{
		{"empty", nil, nil, "<unset>", "<unset>"},
		{"a port with neither number nor name", []discoveryv1.EndpointPort{{}}, nil, "*", "<unset>"},
		{
			"truncated ports and addresses",
			[]discoveryv1.EndpointPort{port(80), port(443), named, port(8080)},
			[]discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1", "10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4", "10.0.0.5"}}},
			"80,443,dns + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := &discoveryv1.EndpointSlice{ObjectMeta: objectMeta("web-abc12", time.Minute), AddressType: discoveryv1.AddressTypeIPv4, Ports: tt.ports, Endpoints: tt.endpoints}
			cells := rowOf(t, schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, es)
			if cells[2] != tt.wantPorts {
				t.Errorf("PORTS = %q, want %q", cells[2], tt.wantPorts)
			}
			if cells[3] != tt.wantEndpoints {
				t.Errorf("ENDPOINTS = %q, want %q", cells[3], tt.wantEndpoints)
			}
		})
	}
}

func TestEventsPrintAlikeInBothAPIs(t *testing.T) {
	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", FieldPath: "spec.containers{app}"}
	core := &corev1.Event{
		ObjectMeta:          objectMeta("web-0.17a", time.Minute),
		InvolvedObject:      regarding,
		Reason:              "BackOff",
		Message:             "Back-off restarting failed container\n",
		Type:                corev1.EventTypeWarning,
		EventTime:           metav1.NewMicroTime(testNow.Add(-20 * time.Minute)),
		Series:              &corev1.EventSeries{Count: 12, LastObservedTime: metav1.NewMicroTime(testNow.Add(-30 * time.Second))},
		ReportingController: "kubelet",
		ReportingInstance:   "worker-1",
	}
	v1 := &eventsv1.Event{
		ObjectMeta:          objectMeta("web-0.17a", time.Minute),
		Regarding:           regarding,
		Reason:              "BackOff",
		Note:                "Back-off restarting failed container\n",
		Type:                corev1.EventTypeWarning,
		EventTime:           metav1.NewMicroTime(testNow.Add(-20 * time.Minute)),
		Series:              &eventsv1.EventSeries{Count: 12, LastObservedTime: metav1.NewMicroTime(testNow.Add(-30 * time.Second))},
		ReportingController: "kubelet",
		ReportingInstance:   "worker-1",
	}
	want := []interface{}{"30s", "Warning", "BackOff", "pod/web-0", "spec.containers{app}", "kubelet, worker-1", "Back-off restarting failed container", "20m", int64(12), "web-0.17a"}
	assertCells(t, rowOf(t, schema.GroupResource{Resource: "events"}, core), want)
	assertCells(t, rowOf(t, schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, v1), want)
}

func TestEventTimestampsAndCount(t *testing.T) {
	tests := []struct {
		name      string
		event     corev1.Event
		wantLast  string
		wantFirst string
		wantCount int64
		wantObj   string
		wantSrc   string
	}{
		{
			name: "old-style event",
			event: corev1.Event{
				InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "worker-1"},
				Source:         corev1.EventSource{Component: "kubelet", Host: "worker-1"},
				FirstTimestamp: ago(4 * time.Hour), LastTimestamp: ago(5 * time.Minute), Count: 4,
			},
			wantLast: "5m", wantFirst: "4h", wantCount: 4, wantObj: "node/worker-1", wantSrc: "kubelet, worker-1",
		},
		{
			name: "singleton new-style event",
			event: corev1.Event{
				InvolvedObject:      corev1.ObjectReference{Kind: "Deployment"},
				EventTime:           metav1.NewMicroTime(testNow.Add(-3 * time.Minute)),
				ReportingController: "deployment-controller",
			},
			wantLast: "3m", wantFirst: "3m", wantCount: 1, wantObj: "deployment", wantSrc: "deployment-controller",
		},
		{
			name:     "no time at all",
			event:    corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"}},
			wantLast: "<unknown>", wantFirst: "<unknown>", wantCount: 1, wantObj: "pod/p", wantSrc: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.event
			e.ObjectMeta = objectMeta("e", time.Minute)
			cells := rowOf(t, schema.GroupResource{Resource: "events"}, &e)
			got := []interface{}{cells[0], cells[7], cells[8], cells[3], cells[5]}
			want := []interface{}{tt.wantLast, tt.wantFirst, tt.wantCount, tt.wantObj, tt.wantSrc}
			assertCells(t, got, want)
		})
	}
}

func TestForResource(t *testing.T) {
	if p := ForResource(schema.GroupResource{Group: "example.com", Resource: "widgets"}); p != nil {
		t.Errorf("unknown resource got a printer")
	}
	if p := ForResource(schema.GroupResource{Group: "apps", Resource: "pods"}); p != nil {
		t.Errorf("pods in the wrong group got a printer")
	}
	// Kubernetes prints these with its default table.
	for _, gr := range []schema.GroupResource{
		{Resource: "limitranges"},
		{Group: "rbac.authorization.k8s.io", Resource: "roles"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	} {
		p := ForResource(gr)
		if p == nil || len(p.Columns) != 2 || p.Columns[1].Name != "Created At" {
			t.Errorf("%s: want the default printer, got %+v", gr, p)
		}
	}
}

func TestRowRejectsOtherTypes(t *testing.T) {
	_, err := ForResource(schema.GroupResource{Resource: "pods"}).Row(&corev1.Node{}, testNow)
	if err == nil || !strings.Contains(err.Error(), "*v1.Node") {
		t.Fatalf("printing a node as a pod: got %v, want a type error", err)
	}
}

func TestDefaultPrinter(t *testing.T) {
	p := Default()
	if p.Columns[0].Format != "name" || p.Columns[1].Type != "date" {
		t.Fatalf("columns = %+v", p.Columns)
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", CreationTimestamp: metav1.NewTime(time.Date(2025, 5, 1, 8, 30, 0, 0, time.FixedZone("CEST", 2*3600)))}}
	cells, err := p.Row(lr, testNow)
	if err != nil {
		t.Fatal(err)
	}
	assertCells(t, cells, []interface{}{"limits", "2025-05-01T06:30:00Z"})
	if _, err := p.Row(&metav1.Status{}, testNow); err == nil {
		t.Errorf("an object without metadata printed without error")
	}
}

func TestAge(t *testing.T) {
	tests := []struct {
		created metav1.Time
		want    string
	}{
		{metav1.Time{}, "<unknown>"},
		{ago(0), "0s"},
		{ago(119 * time.Second), "119s"},
		{ago(2 * time.Minute), "2m"},
		{ago(9*time.Minute + 30*time.Second), "9m30s"},
		{ago(5*time.Hour + 10*time.Minute), "5h10m"},
		{ago(50 * time.Hour), "2d2h"},
		{ago(400 * 24 * time.Hour), "400d"},
		{metav1.NewTime(testNow.Add(time.Hour)), "<invalid>"},
	}
	for _, tt := range tests {
		if got := age(tt.created, testNow); got != tt.want {
			t.Errorf("age(%v) = %q, want %q", tt.created, got, tt.want)
		}
	}
}

func assertCells(t *testing.T, got, want []interface{}) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d cells %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, got[i], want[i])
		}
	}
}

func strPtr(s string) *string { return &s }
