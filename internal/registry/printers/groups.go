package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

func leasePrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Holder", columnTypeString, coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
			ageColumn(),
		},
		Row: typedRow("leases", func(l *coordinationv1.Lease, now time.Time) ([]interface{}, error) {
			return []interface{}{l.Name, derefOr(l.Spec.HolderIdentity, ""), age(l.CreationTimestamp, now)}, nil
		}),
	}
}

func endpointSlicePrinter() *registry.TablePrinter {
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("AddressType", columnTypeString, doc["addressType"]),
			column("Ports", columnTypeString, doc["ports"]),
			column("Endpoints", columnTypeString, doc["endpoints"]),
			ageColumn(),
		},
		Row: typedRow("endpointslices", func(es *discoveryv1.EndpointSlice, now time.Time) ([]interface{}, error) {
			return []interface{}{
				es.Name, string(es.AddressType), endpointSlicePorts(es.Ports), endpointSliceAddresses(es.Endpoints),
				age(es.CreationTimestamp, now),
			}, nil
		}),
	}
}

// endpointSlicePorts lists up to three port numbers (the name for a port without a number, "*"
// for neither), "<unset>" when there are none.
func endpointSlicePorts(ports []discoveryv1.EndpointPort) string {
	var list []string
	for _, p := range ports {
		if len(list) == maxListedAddresses {
			break
		}
		switch {
		case p.Port != nil:
			list = append(list, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			list = append(list, *p.Name)
		default:
			list = append(list, "*")
		}
	}
	return listWithMore(list, len(ports), unsetCell)
}

// endpointSliceAddresses lists up to three addresses over all endpoints, "<unset>" when none.
func endpointSliceAddresses(endpoints []discoveryv1.Endpoint) string {
	var list []string
	total := 0
	for _, ep := range endpoints {
		for _, addr := range ep.Addresses {
			if len(list) < maxListedAddresses {
				list = append(list, addr)
			}
			total++
		}
	}
	return listWithMore(list, total, unsetCell)
}

func podDisruptionBudgetPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Min Available", columnTypeString, "The minimum number of pods that must be available."),
			column("Max Unavailable", columnTypeString, "The maximum number of pods that may be unavailable."),
			column("Allowed Disruptions", columnTypeInt, "Calculated number of pods that may be disrupted at this time."),
			ageColumn(),
		},
		Row: typedRow("poddisruptionbudgets", func(pdb *policyv1.PodDisruptionBudget, now time.Time) ([]interface{}, error) {
			minAvailable, maxUnavailable := "N/A", "N/A"
			if pdb.Spec.MinAvailable != nil {
				minAvailable = pdb.Spec.MinAvailable.String()
			}
			if pdb.Spec.MaxUnavailable != nil {
				maxUnavailable = pdb.Spec.MaxUnavailable.String()
			}
			return []interface{}{
				pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp, now),
			}, nil
		}),
	}
}

func roleBindingPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: bindingColumns("roleBinding"),
		Row: typedRow("rolebindings", func(b *rbacv1.RoleBinding, now time.Time) ([]interface{}, error) {
			return bindingRow(b.Name, b.CreationTimestamp, b.RoleRef, b.Subjects, now), nil
		}),
	}
}

func clusterRoleBindingPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: bindingColumns("clusterRoleBinding"),
		Row: typedRow("clusterrolebindings", func(b *rbacv1.ClusterRoleBinding, now time.Time) ([]interface{}, error) {
			return bindingRow(b.Name, b.CreationTimestamp, b.RoleRef, b.Subjects, now), nil
		}),
	}
}

// bindingColumns are the columns of both binding kinds; kind names the object in the
// descriptions as Kubernetes does ("Users in the clusterRoleBinding").
func bindingColumns(kind string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Role", columnTypeString, rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		ageColumn(),
		wide(column("Users", columnTypeString, "Users in the "+kind)),
		wide(column("Groups", columnTypeString, "Groups in the "+kind)),
		wide(column("ServiceAccounts", columnTypeString, "ServiceAccounts in the "+kind)),
	}
}

// bindingRow prints a binding; subjects are split by kind, service accounts as namespace/name.
func bindingRow(name string, created metav1.Time, roleRef rbacv1.RoleRef, subjects []rbacv1.Subject, now time.Time) []interface{} {
	var users, groups, serviceAccounts []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			serviceAccounts = append(serviceAccounts, s.Namespace+"/"+s.Name)
		}
	}
	return []interface{}{
		name, fmt.Sprintf("%s/%s", roleRef.Kind, roleRef.Name), age(created, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(serviceAccounts, ", "),
	}
}

func priorityClassPrinter() *registry.TablePrinter {
	doc := schedulingv1.PriorityClass{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Value", columnTypeInt, doc["value"]),
			column("Global-Default", columnTypeBool, doc["globalDefault"]),
			ageColumn(),
			column("PreemptionPolicy", columnTypeString, doc["preemptionPolicy"]),
		},
		Row: typedRow("priorityclasses", func(pc *schedulingv1.PriorityClass, now time.Time) ([]interface{}, error) {
			policy := ""
			if pc.PreemptionPolicy != nil {
				policy = string(*pc.PreemptionPolicy)
			}
			return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp, now), policy}, nil
		}),
	}
}
