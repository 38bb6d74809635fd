package apps

import (
	"context"
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzDeployment decodes arbitrary JSON as a Deployment, defaults it through the scheme, runs
// create and update validation and the scale accessor: errors are fine, panics are not.
func FuzzDeployment(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","namespace":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`))
	f.Add([]byte(`{"spec":{"selector":{"matchExpressions":[{"key":"","operator":"In"}]},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"x%","maxUnavailable":"101%"}}}}`))
	f.Add([]byte(`{"spec":{"replicas":-1,"strategy":{"type":"Recreate"},"progressDeadlineSeconds":0,"minReadySeconds":5}}`))
	s := runtime.NewScheme()
	if err := appsv1.AddToScheme(s); err != nil {
		f.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		f.Fatal(err)
	}
	r := Resources()[0]
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &appsv1.Deployment{}
		if err := json.Unmarshal(data, d); err != nil {
			return
		}
		s.Default(d)
		ctx := context.Background()
		r.Strategy.PrepareForCreate(ctx, d)
		_ = r.Strategy.Validate(ctx, d)
		upd := d.DeepCopy()
		upd.Spec.Selector = nil
		r.Strategy.PrepareForUpdate(ctx, upd, d)
		_ = r.Strategy.ValidateUpdate(ctx, upd, d)
		r.Status.PrepareForUpdate(ctx, upd, d)
		_ = r.Status.ValidateUpdate(ctx, upd, d)
		if _, err := r.Scale.Get(d); err == nil {
			_ = r.Scale.SetReplicas(d, 3)
		}
	})
}
