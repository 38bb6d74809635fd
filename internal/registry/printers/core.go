package printers

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-sh/skiff/internal/registry"
)

const (
	// nodeRoleLabelPrefix labels carry a node's role in their key: node-role.kubernetes.io/control-plane.
	nodeRoleLabelPrefix = "node-role.kubernetes.io/"
	// nodeRoleLabel is the older form carrying the role in its value.
	nodeRoleLabel = "kubernetes.io/role"
	// storageClassAnnotation is the beta annotation that still takes precedence over storageClassName.
	storageClassAnnotation = "volume.beta.kubernetes.io/storage-class"
	// maxListedAddresses is how many addresses endpoints and endpoint slices list before "+ N more...".
	maxListedAddresses = 3
)

func nodePrinter() *registry.TablePrinter {
	info := corev1.NodeSystemInfo{}.SwaggerDoc()
	addresses := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Status", columnTypeString, "The status of the node"),
			column("Roles", columnTypeString, "The roles of the node"),
			ageColumn(),
			column("Version", columnTypeString, info["kubeletVersion"]),
			wide(column("Internal-IP", columnTypeString, addresses)),
			wide(column("External-IP", columnTypeString, addresses)),
			wide(column("OS-Image", columnTypeString, info["osImage"])),
			wide(column("Kernel-Version", columnTypeString, info["kernelVersion"])),
			wide(column("Container-Runtime", columnTypeString, info["containerRuntimeVersion"])),
		},
		Row: typedRow("nodes", func(node *corev1.Node, now time.Time) ([]interface{}, error) {
			roles := strings.Join(nodeRoles(node), ",")
			info := node.Status.NodeInfo
			return []interface{}{
				node.Name, nodeStatus(node), orNone(roles), age(node.CreationTimestamp, now), info.KubeletVersion,
				nodeAddress(node, corev1.NodeInternalIP), nodeAddress(node, corev1.NodeExternalIP),
				orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion),
			}, nil
		}),
	}
}

// nodeStatus is Ready, NotReady or Unknown (no Ready condition yet), with ",SchedulingDisabled"
// for a cordoned node.
func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	// The last Ready condition wins, as in Kubernetes.
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			status = "Ready"
		} else {
			status = "NotReady"
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles returns the sorted, distinct roles named by node-role.kubernetes.io/<role> label keys
// and kubernetes.io/role label values.
func nodeRoles(node *corev1.Node) []string {
	seen := make(map[string]bool)
	var roles []string
	add := func(role string) {
		if role != "" && !seen[role] {
			seen[role] = true
			roles = append(roles, role)
		}
	}
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, nodeRoleLabelPrefix):
			add(strings.TrimPrefix(k, nodeRoleLabelPrefix))
		case k == nodeRoleLabel:
			add(v)
		}
	}
	sort.Strings(roles)
	return roles
}

// nodeAddress returns the node's first address of type typ, or "<none>".
func nodeAddress(node *corev1.Node, typ corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return noneCell
}

func orUnknown(s string) string {
	if s == "" {
		return unknownCell
	}
	return s
}

func namespacePrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Status", columnTypeString, "The status of the namespace"),
			ageColumn(),
		},
		Row: typedRow("namespaces", func(ns *corev1.Namespace, now time.Time) ([]interface{}, error) {
			return []interface{}{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}, nil
		}),
	}
}

func servicePrinter() *registry.TablePrinter {
	doc := corev1.ServiceSpec{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Type", columnTypeString, doc["type"]),
			column("Cluster-IP", columnTypeString, doc["clusterIP"]),
			column("External-IP", columnTypeString, doc["externalIPs"]),
			column("Port(s)", columnTypeString, doc["ports"]),
			ageColumn(),
			wide(column("Selector", columnTypeString, doc["selector"])),
		},
		Row: typedRow("services", func(svc *corev1.Service, now time.Time) ([]interface{}, error) {
			clusterIP := svc.Spec.ClusterIP
			if len(svc.Spec.ClusterIPs) > 0 {
				clusterIP = svc.Spec.ClusterIPs[0]
			}
			return []interface{}{
				svc.Name, string(svc.Spec.Type), orNone(clusterIP), serviceExternalIP(svc),
				orNone(servicePorts(svc.Spec.Ports)), age(svc.CreationTimestamp, now), labels.FormatLabels(svc.Spec.Selector),
			}, nil
		}),
	}
}

// serviceExternalIP is the EXTERNAL-IP cell: the external IPs, plus for a load balancer its
// ingress addresses ("<pending>" until it has one), or the DNS name of an ExternalName service.
// Kubernetes clips load-balancer addresses only for non-wide output, and its server always
// prints wide, so nothing is clipped here.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		ips := loadBalancerAddresses(svc.Status.LoadBalancer)
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return unknownCell
}

// loadBalancerAddresses returns the sorted, distinct ingress IPs (or hostnames where no IP).
func loadBalancerAddresses(lb corev1.LoadBalancerStatus) []string {
	return uniqueAddresses(len(lb.Ingress), func(i int) (string, string) { return lb.Ingress[i].IP, lb.Ingress[i].Hostname })
}

// uniqueAddresses lists the n load-balancer ingress points' addresses (the IP, else the host name)
// once each, sorted: Services' and Ingresses' statuses have the same shape in different types.
func uniqueAddresses(n int, at func(i int) (ip, hostname string)) []string {
	seen := make(map[string]bool)
	var out []string
	for i := range n {
		addr, hostname := at(i)
		if addr == "" {
			addr = hostname
		}
		if addr != "" && !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	sort.Strings(out)
	return out
}

// servicePorts prints ports as "80/TCP", with the node port as "80:30080/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	pieces := make([]string, 0, len(ports))
	for _, p := range ports {
		if p.NodePort > 0 {
			pieces = append(pieces, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			pieces = append(pieces, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return strings.Join(pieces, ",")
}

func endpointsPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Endpoints", columnTypeString, corev1.Endpoints{}.SwaggerDoc()["subsets"]),
			ageColumn(),
		},
		Row: typedRow("endpoints", func(ep *corev1.Endpoints, now time.Time) ([]interface{}, error) {
			return []interface{}{ep.Name, formatEndpoints(ep), age(ep.CreationTimestamp, now)}, nil
		}),
	}
}

// formatEndpoints lists the first three ready addresses as ip:port (one per address and port;
// bare IPs for a subset without ports), then "+ N more..." for the rest.
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return noneCell
	}
	var list []string
	total := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			total += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < maxListedAddresses {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, port := range ss.Ports {
			total += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < maxListedAddresses {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
				}
			}
		}
	}
	return listWithMore(list, total, "")
}

// listWithMore joins list and appends "+ N more..." when total exceeds what was listed; an empty
// result prints as empty.
func listWithMore(list []string, total int, empty string) string {
	s := strings.Join(list, ",")
	if total > len(list) {
		return fmt.Sprintf("%s + %d more...", s, total-len(list))
	}
	if s == "" {
		return empty
	}
	return s
}

func configMapPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Data", columnTypeString, corev1.ConfigMap{}.SwaggerDoc()["data"]),
			ageColumn(),
		},
		Row: typedRow("configmaps", func(cm *corev1.ConfigMap, now time.Time) ([]interface{}, error) {
			return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}, nil
		}),
	}
}

func secretPrinter() *registry.TablePrinter {
	doc := corev1.Secret{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Type", columnTypeString, doc["type"]),
			column("Data", columnTypeString, doc["data"]),
			ageColumn(),
		},
		Row: typedRow("secrets", func(s *corev1.Secret, now time.Time) ([]interface{}, error) {
			// Kubernetes folds stringData into data before storing; count a stray stringData key
			// the same way so the cell matches what the stored object will say.
			keys := len(s.Data)
			for k := range s.StringData {
				if _, dup := s.Data[k]; !dup {
					keys++
				}
			}
			return []interface{}{s.Name, string(s.Type), int64(keys), age(s.CreationTimestamp, now)}, nil
		}),
	}
}

func serviceAccountPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Secrets", columnTypeString, corev1.ServiceAccount{}.SwaggerDoc()["secrets"]),
			ageColumn(),
		},
		Row: typedRow("serviceaccounts", func(sa *corev1.ServiceAccount, now time.Time) ([]interface{}, error) {
			return []interface{}{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}, nil
		}),
	}
}

func resourceQuotaPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Request", columnTypeString, "Request represents a minimum amount of cpu/memory that a container may consume."),
			column("Limit", columnTypeString, "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
			ageColumn(),
		},
		Row: typedRow("resourcequotas", func(q *corev1.ResourceQuota, now time.Time) ([]interface{}, error) {
			requests, limits := quotaUsage(q)
			return []interface{}{q.Name, requests, limits, age(q.CreationTimestamp, now)}, nil
		}),
	}
}

// quotaUsage prints "resource: used/hard" for every hard limit in the quota's status, sorted by
// name, split into the limits.* resources and all others.
func quotaUsage(q *corev1.ResourceQuota) (requests, limits string) {
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var req, lim []string
	for _, name := range names {
		used := q.Status.Used[corev1.ResourceName(name)]
		hard := q.Status.Hard[corev1.ResourceName(name)]
		entry := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits.") {
			lim = append(lim, entry)
		} else {
			req = append(req, entry)
		}
	}
	return strings.Join(req, ", "), strings.Join(lim, ", ")
}

func persistentVolumePrinter() *registry.TablePrinter {
	spec := corev1.PersistentVolumeSpec{}.SwaggerDoc()
	status := corev1.PersistentVolumeStatus{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Capacity", columnTypeString, spec["capacity"]),
			column("Access Modes", columnTypeString, spec["accessModes"]),
			column("Reclaim Policy", columnTypeString, spec["persistentVolumeReclaimPolicy"]),
			column("Status", columnTypeString, status["phase"]),
			column("Claim", columnTypeString, spec["claimRef"]),
			column("StorageClass", columnTypeString, "StorageClass of the pv"),
			column("VolumeAttributesClass", columnTypeString, "VolumeAttributesClass of the pv"),
			column("Reason", columnTypeString, status["reason"]),
			ageColumn(),
			wide(column("VolumeMode", columnTypeString, spec["volumeMode"])),
		},
		Row: typedRow("persistentvolumes", func(pv *corev1.PersistentVolume, now time.Time) ([]interface{}, error) {
			claim := ""
			if ref := pv.Spec.ClaimRef; ref != nil {
				claim = ref.Namespace + "/" + ref.Name
			}
			capacity := pv.Spec.Capacity[corev1.ResourceStorage]
			phase := string(pv.Status.Phase)
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			class := pv.Spec.StorageClassName
			if a, ok := pv.Annotations[storageClassAnnotation]; ok {
				class = a
			}
			return []interface{}{
				pv.Name, capacity.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
				phase, claim, class, derefOr(pv.Spec.VolumeAttributesClassName, unsetCell),
				pv.Status.Reason, age(pv.CreationTimestamp, now), volumeMode(pv.Spec.VolumeMode),
			}, nil
		}),
	}
}

func persistentVolumeClaimPrinter() *registry.TablePrinter {
	spec := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()
	status := corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Status", columnTypeString, status["phase"]),
			column("Volume", columnTypeString, spec["volumeName"]),
			column("Capacity", columnTypeString, status["capacity"]),
			column("Access Modes", columnTypeString, status["accessModes"]),
			column("StorageClass", columnTypeString, "StorageClass of the pvc"),
			column("VolumeAttributesClass", columnTypeString, "VolumeAttributesClass of the pvc"),
			ageColumn(),
			wide(column("VolumeMode", columnTypeString, spec["volumeMode"])),
		},
		Row: typedRow("persistentvolumeclaims", func(pvc *corev1.PersistentVolumeClaim, now time.Time) ([]interface{}, error) {
			phase := string(pvc.Status.Phase)
			if pvc.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			// Capacity and access modes are the bound volume's, so they stay empty until bound.
			capacity, modes := "", ""
			if pvc.Spec.VolumeName != "" {
				q := pvc.Status.Capacity[corev1.ResourceStorage]
				capacity, modes = q.String(), accessModes(pvc.Status.AccessModes)
			}
			class := ""
			if a, ok := pvc.Annotations[storageClassAnnotation]; ok {
				class = a
			} else if pvc.Spec.StorageClassName != nil {
				class = *pvc.Spec.StorageClassName
			}
			return []interface{}{
				pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class,
				derefOr(pvc.Spec.VolumeAttributesClassName, unsetCell), age(pvc.CreationTimestamp, now), volumeMode(pvc.Spec.VolumeMode),
			}, nil
		}),
	}
}

// accessModes abbreviates access modes in Kubernetes' fixed order: RWO,ROX,RWX,RWOP.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	has := make(map[corev1.PersistentVolumeAccessMode]bool, len(modes))
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"},
		{corev1.ReadOnlyMany, "ROX"},
		{corev1.ReadWriteMany, "RWX"},
		{corev1.ReadWriteOncePod, "RWOP"},
	} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return unsetCell
	}
	return string(*m)
}

func derefOr(s *string, fallback string) string {
	if s == nil {
		return fallback
	}
	return *s
}

func podTemplatePrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		// Kubernetes prints no age for pod templates.
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Containers", columnTypeString, "Names of each container in the template."),
			column("Images", columnTypeString, "Images referenced by each container in the template."),
			column("Pod Labels", columnTypeString, "The labels for the pod template."),
		},
		Row: typedRow("podtemplates", func(pt *corev1.PodTemplate, _ time.Time) ([]interface{}, error) {
			names, images := containerCells(pt.Template.Spec.Containers)
			return []interface{}{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}, nil
		}),
	}
}

func componentStatusPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Status", columnTypeString, "Status of the component conditions"),
			column("Message", columnTypeString, "Message of the component conditions"),
			column("Error", columnTypeString, "Error of the component conditions"),
		},
		Row: typedRow("componentstatuses", func(cs *corev1.ComponentStatus, _ time.Time) ([]interface{}, error) {
			status, message, errText := "Unknown", "", ""
			for _, c := range cs.Conditions {
				if c.Type != corev1.ComponentHealthy {
					continue
				}
				status = "Unhealthy"
				if c.Status == corev1.ConditionTrue {
					status = "Healthy"
				}
				message, errText = c.Message, c.Error
				break
			}
			return []interface{}{cs.Name, status, message, errText}, nil
		}),
	}
}
