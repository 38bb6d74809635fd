package batch

import (
	"context"
	"encoding/json"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzCronJob decodes arbitrary JSON as a CronJob, defaults it through the scheme and runs the
// create and update validation: bad input must produce field errors, never a panic.
func FuzzCronJob(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","namespace":"d"},"spec":{"schedule":"*/1 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}}}`))
	f.Add([]byte(`{"spec":{"schedule":"TZ=x @every 1h","timeZone":"","concurrencyPolicy":"x","jobTemplate":{"spec":{"completionMode":"Indexed","backoffLimitPerIndex":-1,"podFailurePolicy":{"rules":[{"onPodConditions":[{}]}]}}}}}`))
	f.Add([]byte(`{"spec":{"schedule":"0 0 31 2 *","timeZone":"America/New_York","startingDeadlineSeconds":-5}}`))
	s := runtime.NewScheme()
	if err := batchv1.AddToScheme(s); err != nil {
		f.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		f.Fatal(err)
	}
	var strategy = Resources()[1].Strategy
	f.Fuzz(func(t *testing.T, data []byte) {
		cj := &batchv1.CronJob{}
		if err := json.Unmarshal(data, cj); err != nil {
			return
		}
		s.Default(cj)
		ctx := context.Background()
		strategy.PrepareForCreate(ctx, cj)
		_ = strategy.Validate(ctx, cj)
		upd := cj.DeepCopy()
		upd.Spec.Schedule = "@daily"
		strategy.PrepareForUpdate(ctx, upd, cj)
		_ = strategy.ValidateUpdate(ctx, upd, cj)
	})
}
