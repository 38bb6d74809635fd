package defaulttolerationseconds

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is Kubernetes' name of the plugin.
const Name = "DefaultTolerationSeconds"

// DefaultSeconds is kube-apiserver's default of --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds.
const DefaultSeconds = 300

// Plugin lets pods ride out a short node outage: NoExecute tolerations for the not-ready taint
// (for NotReady seconds) and the unreachable one (Unreachable seconds), unless the pod already has
// its own.
type Plugin struct{ NotReady, Unreachable int64 }

func (Plugin) Name() string { return Name }

func (d Plugin) Admit(_ context.Context, a *admission.Attributes, _ admission.Lookup) error {
	pod, ok := a.PodCreate()
	if !ok {
		return nil
	}
	for _, def := range []struct {
		key  string
		secs int64
	}{{corev1.TaintNodeNotReady, d.NotReady}, {corev1.TaintNodeUnreachable, d.Unreachable}} {
		key, secs := def.key, def.secs
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				tolerated = true
				break
			}
		}
		if !tolerated {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs,
			})
		}
	}
	return nil
}

func (Plugin) Validate(context.Context, *admission.Attributes, admission.Lookup) error { return nil }
