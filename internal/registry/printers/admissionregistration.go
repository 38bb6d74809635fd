package printers

import (
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

const groupAdmissionRegistration = "admissionregistration.k8s.io"

// admissionRegistrationPrinter has kubectl's columns: webhook counts for the configurations,
// validations and paramKind for policies, policy and paramRef for bindings.
func admissionRegistrationPrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "mutatingwebhookconfigurations":
		return &registry.TablePrinter{
			Columns: []metav1.TableColumnDefinition{nameColumn(), column("Webhooks", columnTypeInt, "Webhooks indicates the number of webhooks registered in this configuration"), ageColumn()},
			Row: typedRow(resource, func(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) ([]interface{}, error) {
				return []interface{}{c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp, now)}, nil
			}),
		}
	case "validatingwebhookconfigurations":
		return &registry.TablePrinter{
			Columns: []metav1.TableColumnDefinition{nameColumn(), column("Webhooks", columnTypeInt, "Webhooks indicates the number of webhooks registered in this configuration"), ageColumn()},
			Row: typedRow(resource, func(c *admissionregistrationv1.ValidatingWebhookConfiguration, now time.Time) ([]interface{}, error) {
				return []interface{}{c.Name, int64(len(c.Webhooks)), age(c.CreationTimestamp, now)}, nil
			}),
		}
	case "validatingadmissionpolicies":
		return &registry.TablePrinter{
			Columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Validations", columnTypeInt, "Validations indicates the number of validation rules defined in this configuration"),
				column("ParamKind", columnTypeString, "ParamKind specifies the kind of resources used to parameterize this policy"),
				ageColumn(),
			},
			Row: typedRow(resource, func(p *admissionregistrationv1.ValidatingAdmissionPolicy, now time.Time) ([]interface{}, error) {
				paramKind := "<unset>"
				if p.Spec.ParamKind != nil {
					paramKind = p.Spec.ParamKind.APIVersion + "/" + p.Spec.ParamKind.Kind
				}
				return []interface{}{p.Name, int64(len(p.Spec.Validations)), paramKind, age(p.CreationTimestamp, now)}, nil
			}),
		}
	case "validatingadmissionpolicybindings":
		return &registry.TablePrinter{
			Columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("PolicyName", columnTypeString, "PolicyName indicates the policy definition which the policy binding binded to"),
				column("ParamRef", columnTypeString, "ParamRef indicates the param resource which sets the configration param"),
				ageColumn(),
			},
			Row: typedRow(resource, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, now time.Time) ([]interface{}, error) {
				paramRef := "<unset>"
				if r := b.Spec.ParamRef; r != nil {
					switch {
					case r.Name != "" && r.Namespace != "":
						paramRef = fmt.Sprintf("%s/%s", r.Namespace, r.Name)
					case r.Name != "":
						paramRef = r.Name
					default:
						paramRef = "*/" + metav1.FormatLabelSelector(r.Selector)
					}
				}
				return []interface{}{b.Name, b.Spec.PolicyName, paramRef, age(b.CreationTimestamp, now)}, nil
			}),
		}
	}
	return nil
}
