package core

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzValidatePod decodes arbitrary JSON into a pod, defaults it and runs every pod strategy step;
// none of it may panic, whatever the input.
func FuzzValidatePod(f *testing.F) {
	seeds := []string{
		`{"metadata":{"name":"web","namespace":"default"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`,
		`{"metadata":{"name":"x","namespace":"d"},"spec":{"volumes":[{"name":"v","hostPath":{"path":"/"},"emptyDir":{}}],"containers":[{"name":"a","image":"b","volumeMounts":[{"name":"v","mountPath":"/m","subPath":"../x"}],"livenessProbe":{"httpGet":{"port":"http"}},"resources":{"limits":{"cpu":"1"},"requests":{"cpu":"2","example.com/gpu":"1"}}}]}}`,
		`{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"Gt"}]}]}},"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{}]}},"tolerations":[{"tolerationSeconds":1}],"ephemeralContainers":[{"name":"d"}],"initContainers":[{"name":"i","restartPolicy":"Always","lifecycle":{"preStop":{}}}]}}`,
		`{"spec":{"volumes":[{"name":"p","projected":{"sources":[{},{"serviceAccountToken":{"path":"t","expirationSeconds":1}},{"secret":{},"configMap":{}}]}},{"name":"d","downwardAPI":{"items":[{"path":"a"}]}}],"containers":[{"name":"c","env":[{"name":"E","valueFrom":{}}],"envFrom":[{}]}]}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var pod corev1.Pod
		if err := json.Unmarshal(data, &pod); err != nil {
			return
		}
		ctx := context.Background()
		strategy := newPodStrategy()
		DefaultPod(&pod)
		strategy.PrepareForCreate(ctx, &pod)
		_ = strategy.Validate(ctx, &pod)

		updated := pod.DeepCopy()
		if len(updated.Spec.Containers) > 0 {
			updated.Spec.Containers[0].Image += "x"
		}
		updated.Spec.Tolerations = nil
		strategy.PrepareForUpdate(ctx, updated, &pod)
		_ = strategy.ValidateUpdate(ctx, updated, &pod)
		_ = newPodStatusStrategy().ValidateUpdate(ctx, updated, &pod)
		_ = strategy.CheckGracefulDelete(ctx, &pod, &metav1.DeleteOptions{})
		_ = podSelectableFields(&pod)
	})
}

// FuzzValidateService does the same for services.
func FuzzValidateService(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"web","namespace":"default"},"spec":{"ports":[{"port":80}],"selector":{"app":"web"}}}`))
	f.Add([]byte(`{"metadata":{"name":"w"},"spec":{"type":"ExternalName","clusterIPs":["None","1.2.3.4","::1"],"ipFamilies":["IPv4","IPv4"],"sessionAffinity":"ClientIP","sessionAffinityConfig":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var svc corev1.Service
		if err := json.Unmarshal(data, &svc); err != nil {
			return
		}
		ctx := context.Background()
		strategy := newServiceStrategy()
		DefaultService(&svc)
		strategy.PrepareForCreate(ctx, &svc)
		_ = strategy.Validate(ctx, &svc)
		updated := svc.DeepCopy()
		updated.Spec.Type = corev1.ServiceTypeExternalName
		strategy.PrepareForUpdate(ctx, updated, &svc)
		_ = strategy.ValidateUpdate(ctx, updated, &svc)
	})
}
