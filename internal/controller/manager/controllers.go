package manager

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Controller names, as kube-controller-manager spells them.
const (
	ReplicaSet = "replicaset"
	// ReplicationController is the ReplicaSet controller over ReplicationControllers.
	ReplicationController = "replicationcontroller"
	Deployment            = "deployment"
	DaemonSet             = "daemonset"
	StatefulSet           = "statefulset"
	Job                   = "job"
	CronJob               = "cronjob"
	GarbageCollector      = "garbagecollector"
	Namespace             = "namespace"
	NodeLifecycle         = "nodelifecycle"
	Endpoint              = "endpoint"
	EndpointSlice         = "endpointslice"
	// EndpointSliceMirroring mirrors custom Endpoints (of selectorless Services) into slices.
	EndpointSliceMirroring = "endpointslicemirroring"
	ServiceAccount         = "serviceaccount"
	PodGC                  = "podgc"
	ResourceQuota          = "resourcequota"
	NodeIPAM               = "nodeipam"
	TTLAfterFinished       = "ttl-after-finished"
	Disruption             = "disruption"
	// RootCACertPublisher keeps kube-root-ca.crt in every namespace.
	RootCACertPublisher = "root-ca-cert-publisher"
	// PersistentVolumeBinder binds claims to statically provisioned volumes.
	PersistentVolumeBinder = "persistentvolume-binder"
	// CSRSigning issues certificates for approved CertificateSigningRequests from the cluster CA.
	CSRSigning = "csrsigning"
	// CSRApproving approves kubelet client CertificateSigningRequests of joining and renewing nodes.
	CSRApproving = "csrapproving"
	// TokenCleaner deletes expired bootstrap token Secrets.
	TokenCleaner = "tokencleaner"
	// CSRCleaner deletes finished and abandoned CertificateSigningRequests.
	CSRCleaner = "csrcleaner"
	// ClusterRoleAggregation fills aggregated ClusterRoles (admin, edit, view) from the roles they select.
	ClusterRoleAggregation = "clusterrole-aggregation"
	// LocalPathProvisioner provisions volumes of the built-in local-path StorageClass on the
	// scheduler's selected node and deletes released ones.
	LocalPathProvisioner = "local-path-provisioner"
	// DNSEndpoints keeps the kube-dns Service's EndpointSlices: one endpoint per worker node,
	// where skiff's node-local DNS answers.
	DNSEndpoints = "dns-endpoints"
	// HorizontalPodAutoscaling scales the targets of HorizontalPodAutoscalers from their metrics.
	HorizontalPodAutoscaling = "horizontalpodautoscaling"
	// PVCProtection keeps a claim being deleted while a pod uses it (the kubernetes.io/pvc-protection finalizer).
	PVCProtection = "pvc-protection"
	// PVProtection keeps a volume being deleted while it is bound (the kubernetes.io/pv-protection finalizer).
	PVProtection = "pv-protection"
	// AttachDetach makes and deletes the VolumeAttachments of the CSI volumes pods use and keeps the
	// nodes' volumesAttached.
	AttachDetach = "attachdetach"
	// VACProtection keeps a VolumeAttributesClass being deleted while a claim or a volume names it
	// (the kubernetes.io/vac-protection finalizer).
	VACProtection = "volumeattributesclass-protection"
	// ServiceCIDRs keeps each ServiceCIDR's finalizer and Ready condition, and a ServiceCIDR being
	// deleted while cluster IPs only it covers are held.
	ServiceCIDRs = "service-cidr-controller"
	// EphemeralVolume makes the claims of pods' generic ephemeral volumes.
	EphemeralVolume = "ephemeral-volume"
	// Gateway writes the status of the Gateway API objects of skiff's GatewayClasses (issue 29).
	Gateway = "gateway"
)

// KnownControllers lists every controller name --controllers accepts.
func KnownControllers() []string {
	return []string{ReplicaSet, Deployment, DaemonSet, StatefulSet, Job, CronJob, GarbageCollector, Namespace,
		NodeLifecycle, Endpoint, EndpointSlice, ServiceAccount, PodGC, ResourceQuota, NodeIPAM, TTLAfterFinished, Disruption,
		RootCACertPublisher, PersistentVolumeBinder, EndpointSliceMirroring, CSRSigning, CSRApproving, CSRCleaner,
		ReplicationController, ClusterRoleAggregation, LocalPathProvisioner, DNSEndpoints, TokenCleaner,
		HorizontalPodAutoscaling, PVCProtection, PVProtection, VACProtection, AttachDetach, EphemeralVolume, Gateway,
		ServiceCIDRs}
}

// ParseControllers turns --controllers values into the set of enabled
// controllers: "*" enables all, "name" enables one, "-name" disables one and
// wins over "*". Without "*" only the named controllers run. Unknown names
// are an error, as they are for kube-controller-manager.
func ParseControllers(values []string) (sets.Set[string], error) {
	known := sets.New(KnownControllers()...)
	star := false
	enabled, disabled := sets.New[string](), sets.New[string]()
	for _, raw := range values {
		v := strings.TrimSpace(raw)
		switch {
		case v == "*":
			star = true
		case strings.HasPrefix(v, "-"):
			name := v[1:]
			if !known.Has(name) {
				return nil, fmt.Errorf("%q is not in the list of known controllers", name)
			}
			disabled.Insert(name)
		case v == "":
			return nil, fmt.Errorf("empty controller name in --controllers")
		default:
			if !known.Has(v) {
				return nil, fmt.Errorf("%q is not in the list of known controllers", v)
			}
			enabled.Insert(v)
		}
	}
	if both := enabled.Intersection(disabled); both.Len() > 0 {
		return nil, fmt.Errorf("controllers both enabled and disabled: %s", strings.Join(sets.List(both), ","))
	}
	result := enabled
	if star {
		result = known.Clone()
	}
	return result.Difference(disabled), nil
}

// sortedNames is the stable start order of a set of controllers.
func sortedNames(s sets.Set[string]) []string {
	order := KnownControllers()
	names := s.UnsortedList()
	slices.SortFunc(names, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	return names
}
