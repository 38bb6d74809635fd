package core

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// categoryAll is the category `kubectl get all` expands.
const categoryAll = "all"

// Resources returns the core/v1 resources, with the scope, names, short names and categories
// Kubernetes' discovery reports. Printers are left nil: table printing lives elsewhere.
func Resources() []*registry.Resource {
	gv := schema.GroupVersion{Version: "v1"}
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "Namespace", ListKind: "NamespaceList", Plural: "namespaces", Singular: "namespace",
			ShortNames: []string{"ns"},
			// No deletecollection: DELETE on the collection is a 405, as in Kubernetes, never a
			// sweep of every namespace.
			Verbs:    []string{"create", "delete", "get", "list", "patch", "update", "watch"},
			New:      func() runtime.Object { return &corev1.Namespace{} },
			NewList:  func() runtime.Object { return &corev1.NamespaceList{} },
			Strategy: newNamespaceStrategy(),
			Status:   newNamespaceStatusStrategy(),
			Subresources: map[string]*registry.Subresource{
				"finalize": {Strategy: NamespaceFinalizeStrategy{}, Verbs: []string{"update"}},
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				ns, ok := obj.(*corev1.Namespace)
				if !ok {
					return nil
				}
				// "name" is a historical field Kubernetes still accepts.
				return fields.Set{"status.phase": string(ns.Status.Phase), "name": ns.Name}
			},
		},
		{
			GroupVersion: gv, Kind: "Pod", ListKind: "PodList", Plural: "pods", Singular: "pod",
			ShortNames: []string{"po"}, Categories: []string{categoryAll}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.Pod{} },
			NewList:  func() runtime.Object { return &corev1.PodList{} },
			Strategy: newPodStrategy(),
			Status:   newPodStatusStrategy(),
			Subresources: map[string]*registry.Subresource{
				"ephemeralcontainers": {Strategy: podEphemeralContainersStrategy()},
				"resize":              {Strategy: podResizeStrategy()},
			},
			Actions: map[string]*registry.Action{
				"binding":  podBindingAction(),
				"eviction": podEvictionAction(),
			},
			SelectableFields: podSelectableFields,
		},
		{
			GroupVersion: gv, Kind: "Node", ListKind: "NodeList", Plural: "nodes", Singular: "node",
			ShortNames: []string{"no"},
			New:        func() runtime.Object { return &corev1.Node{} },
			NewList:    func() runtime.Object { return &corev1.NodeList{} },
			Strategy:   newNodeStrategy(),
			Status:     newNodeStatusStrategy(),
			SelectableFields: func(obj runtime.Object) fields.Set {
				node, ok := obj.(*corev1.Node)
				if !ok {
					return nil
				}
				return fields.Set{"spec.unschedulable": strconv.FormatBool(node.Spec.Unschedulable)}
			},
		},
		{
			GroupVersion: gv, Kind: "ReplicationController", ListKind: "ReplicationControllerList", Plural: "replicationcontrollers", Singular: "replicationcontroller",
			ShortNames: []string{"rc"}, Categories: []string{categoryAll}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.ReplicationController{} },
			NewList:  func() runtime.Object { return &corev1.ReplicationControllerList{} },
			Strategy: newReplicationControllerStrategy(),
			Status:   newReplicationControllerStatusStrategy(),
			Scale:    replicationControllerScale(),
			SelectableFields: func(obj runtime.Object) fields.Set {
				rc, ok := obj.(*corev1.ReplicationController)
				if !ok {
					return nil
				}
				return fields.Set{"status.replicas": strconv.Itoa(int(rc.Status.Replicas))}
			},
		},
		{
			GroupVersion: gv, Kind: "Service", ListKind: "ServiceList", Plural: "services", Singular: "service",
			ShortNames: []string{"svc"}, Categories: []string{categoryAll}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.Service{} },
			NewList:  func() runtime.Object { return &corev1.ServiceList{} },
			Strategy: newServiceStrategy(),
			Status:   newServiceStatusStrategy(),
		},
		{
			GroupVersion: gv, Kind: "Endpoints", ListKind: "EndpointsList", Plural: "endpoints", Singular: "endpoints",
			ShortNames: []string{"ep"}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.Endpoints{} },
			NewList:  func() runtime.Object { return &corev1.EndpointsList{} },
			Strategy: newEndpointsStrategy(),
		},
		{
			GroupVersion: gv, Kind: "ConfigMap", ListKind: "ConfigMapList", Plural: "configmaps", Singular: "configmap",
			ShortNames: []string{"cm"}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.ConfigMap{} },
			NewList:  func() runtime.Object { return &corev1.ConfigMapList{} },
			Strategy: newConfigMapStrategy(),
		},
		{
			// Create only, and never stored: the API server turns a Binding posted here into the
			// pods/binding write of the pod it names, as Kubernetes' legacy bindings resource does.
			GroupVersion: gv, Kind: "Binding", ListKind: "BindingList", Plural: "bindings", Singular: "binding",
			Namespaced: true,
			New:        func() runtime.Object { return &corev1.Binding{} },
			NewList:    func() runtime.Object { return &metav1.List{} },
			Strategy:   newBindingStrategy(),
			Verbs:      []string{"create"},
		},
		{
			// Computed on every read from probes, never stored: the cluster wires a read-only
			// store for it, and only get and list are served, as in Kubernetes.
			GroupVersion: gv, Kind: "ComponentStatus", ListKind: "ComponentStatusList", Plural: "componentstatuses", Singular: "componentstatus",
			ShortNames: []string{"cs"},
			New:        func() runtime.Object { return &corev1.ComponentStatus{} },
			NewList:    func() runtime.Object { return &corev1.ComponentStatusList{} },
			Strategy:   newComponentStatusStrategy(),
			Verbs:      []string{"get", "list"},
		},
		{
			GroupVersion: gv, Kind: "PodTemplate", ListKind: "PodTemplateList", Plural: "podtemplates", Singular: "podtemplate",
			Namespaced: true,
			New:        func() runtime.Object { return &corev1.PodTemplate{} },
			NewList:    func() runtime.Object { return &corev1.PodTemplateList{} },
			Strategy:   newPodTemplateStrategy(),
		},
		{
			GroupVersion: gv, Kind: "Secret", ListKind: "SecretList", Plural: "secrets", Singular: "secret",
			Namespaced: true,
			New:        func() runtime.Object { return &corev1.Secret{} },
			NewList:    func() runtime.Object { return &corev1.SecretList{} },
			Strategy:   newSecretStrategy(),
			SelectableFields: func(obj runtime.Object) fields.Set {
				s, ok := obj.(*corev1.Secret)
				if !ok {
					return nil
				}
				return fields.Set{"type": string(s.Type)}
			},
		},
		{
			GroupVersion: gv, Kind: "ServiceAccount", ListKind: "ServiceAccountList", Plural: "serviceaccounts", Singular: "serviceaccount",
			ShortNames: []string{"sa"}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.ServiceAccount{} },
			NewList:  func() runtime.Object { return &corev1.ServiceAccountList{} },
			Strategy: newServiceAccountStrategy(),
			Actions:  map[string]*registry.Action{"token": serviceAccountTokenAction()},
		},
		{
			GroupVersion: gv, Kind: "Event", ListKind: "EventList", Plural: "events", Singular: "event",
			ShortNames: []string{"ev"}, Namespaced: true,
			New:              func() runtime.Object { return &corev1.Event{} },
			NewList:          func() runtime.Object { return &corev1.EventList{} },
			Strategy:         newEventStrategy(),
			SelectableFields: eventSelectableFields,
		},
		{
			GroupVersion: gv, Kind: "LimitRange", ListKind: "LimitRangeList", Plural: "limitranges", Singular: "limitrange",
			ShortNames: []string{"limits"}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.LimitRange{} },
			NewList:  func() runtime.Object { return &corev1.LimitRangeList{} },
			Strategy: newLimitRangeStrategy(),
		},
		{
			GroupVersion: gv, Kind: "ResourceQuota", ListKind: "ResourceQuotaList", Plural: "resourcequotas", Singular: "resourcequota",
			ShortNames: []string{"quota"}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.ResourceQuota{} },
			NewList:  func() runtime.Object { return &corev1.ResourceQuotaList{} },
			Strategy: newResourceQuotaStrategy(),
			Status:   newResourceQuotaStatusStrategy(),
		},
		{
			GroupVersion: gv, Kind: "PersistentVolume", ListKind: "PersistentVolumeList", Plural: "persistentvolumes", Singular: "persistentvolume",
			ShortNames: []string{"pv"},
			New:        func() runtime.Object { return &corev1.PersistentVolume{} },
			NewList:    func() runtime.Object { return &corev1.PersistentVolumeList{} },
			Strategy:   newPersistentVolumeStrategy(),
			Status:     newPersistentVolumeStatusStrategy(),
			SelectableFields: func(obj runtime.Object) fields.Set {
				pv, ok := obj.(*corev1.PersistentVolume)
				if !ok {
					return nil
				}
				return fields.Set{"name": pv.Name}
			},
		},
		{
			GroupVersion: gv, Kind: "PersistentVolumeClaim", ListKind: "PersistentVolumeClaimList", Plural: "persistentvolumeclaims", Singular: "persistentvolumeclaim",
			ShortNames: []string{"pvc"}, Namespaced: true,
			New:      func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
			NewList:  func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
			Strategy: newPersistentVolumeClaimStrategy(),
			Status:   newPersistentVolumeClaimStatusStrategy(),
			SelectableFields: func(obj runtime.Object) fields.Set {
				pvc, ok := obj.(*corev1.PersistentVolumeClaim)
				if !ok {
					return nil
				}
				return fields.Set{"name": pvc.Name}
			},
		},
	}
}

func podSelectableFields(obj runtime.Object) fields.Set {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}

func eventSelectableFields(obj runtime.Object) fields.Set {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return nil
	}
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            ev.InvolvedObject.Kind,
		"involvedObject.namespace":       ev.InvolvedObject.Namespace,
		"involvedObject.name":            ev.InvolvedObject.Name,
		"involvedObject.uid":             string(ev.InvolvedObject.UID),
		"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}
