package printers

import (
	"fmt"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

// maxListedHosts is how many ingress hosts a row names before "+ N more...".
const maxListedHosts = 3

func networkingPrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "ingresses":
		return ingressPrinter()
	case "ingressclasses":
		return ingressClassPrinter()
	case "networkpolicies":
		return networkPolicyPrinter()
	}
	return nil
}

func ingressPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Class", columnTypeString, "The name of the IngressClass resource that should be used for additional configuration"),
			column("Hosts", columnTypeString, "Hosts that incoming requests are matched against before the ingress rule"),
			column("Address", columnTypeString, "Address is a list containing ingress points for the load-balancer"),
			column("Ports", columnTypeString, "Ports of TLS configurations that open"),
			ageColumn(),
		},
		Row: typedRow("ingresses", func(ing *networkingv1.Ingress, now time.Time) ([]interface{}, error) {
			class := noneCell
			if ing.Spec.IngressClassName != nil {
				class = *ing.Spec.IngressClassName
			}
			// Ports are what the ingress opens by convention: 80, and 443 with TLS.
			ports := "80"
			if len(ing.Spec.TLS) != 0 {
				ports = "80, 443"
			}
			return []interface{}{ing.Name, class, ingressHosts(ing.Spec.Rules), ingressAddresses(ing.Status.LoadBalancer), ports, age(ing.CreationTimestamp, now)}, nil
		}),
	}
}

// ingressHosts names the first three rules' hosts (rules without a host are skipped), "*" when
// none has one, with "+ N more..." counting every rule past the third.
func ingressHosts(rules []networkingv1.IngressRule) string {
	var list []string
	more := false
	for _, r := range rules {
		if len(list) == maxListedHosts {
			more = true
		}
		if !more && r.Host != "" {
			list = append(list, r.Host)
		}
	}
	if len(list) == 0 {
		return "*"
	}
	joined := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", joined, len(rules)-maxListedHosts)
	}
	return joined
}

// ingressAddresses is the sorted, distinct load-balancer IPs (hostnames where no IP). The server
// prints the wide form, so the list is not clipped.
func ingressAddresses(lb networkingv1.IngressLoadBalancerStatus) string {
	return strings.Join(uniqueAddresses(len(lb.Ingress), func(i int) (string, string) { return lb.Ingress[i].IP, lb.Ingress[i].Hostname }), ",")
}

func ingressClassPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Controller", columnTypeString, "Controller that is responsible for handling this class"),
			column("Parameters", columnTypeString, "A reference to a resource with additional parameters"),
			ageColumn(),
		},
		Row: typedRow("ingressclasses", func(ic *networkingv1.IngressClass, now time.Time) ([]interface{}, error) {
			params := noneCell
			if p := ic.Spec.Parameters; p != nil {
				params = p.Kind
				if p.APIGroup != nil {
					params += "." + *p.APIGroup
				}
				params += "/" + p.Name
			}
			return []interface{}{ic.Name, ic.Spec.Controller, params, age(ic.CreationTimestamp, now)}, nil
		}),
	}
}

func networkPolicyPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Pod-Selector", columnTypeString, networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]),
			ageColumn(),
		},
		Row: typedRow("networkpolicies", func(np *networkingv1.NetworkPolicy, now time.Time) ([]interface{}, error) {
			return []interface{}{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp, now)}, nil
		}),
	}
}
