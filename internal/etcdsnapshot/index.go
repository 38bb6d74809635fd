package etcdsnapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The API record of the snapshots: a ConfigMap whose data holds one key per snapshot file (its
// name) with the snapshot as JSON, and Events on that ConfigMap for every save, prune and
// failure. The ConfigMap is the durable list (Events expire after an hour), kept equal to what
// retention leaves on disk; the Events are the timeline the dashboard and `kubectl get events`
// show, failures included.
const (
	IndexNamespace = "kube-system"
	IndexName      = "skiff-etcd-snapshots"
	// LeaseName is the Lease in kube-system that lets one control plane at a time take snapshots.
	LeaseName = "skiff-etcd-snapshot"
	// Component is the Events' source and the field manager of the index.
	Component = "skiff-etcd-snapshot"
)

// Event reasons.
const (
	ReasonSaved  = "EtcdSnapshotSaved"
	ReasonPruned = "EtcdSnapshotPruned"
	ReasonFailed = "EtcdSnapshotFailed"
)

// applyIndex is the index's data with add recorded and remove forgotten.
func applyIndex(data map[string]string, add []Snapshot, remove []string) (map[string]string, error) {
	out := maps.Clone(data)
	if out == nil {
		out = map[string]string{}
	}
	for _, name := range remove {
		delete(out, name)
	}
	for _, s := range add {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("record snapshot %s: %w", s.Name, err)
		}
		out[s.Name] = string(b)
	}
	return out, nil
}

// ParseIndex reads the snapshots an index ConfigMap records, oldest first.
func ParseIndex(cm *corev1.ConfigMap) ([]Snapshot, error) {
	var out []Snapshot
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		var s Snapshot
		if err := json.Unmarshal([]byte(cm.Data[key]), &s); err != nil {
			return nil, fmt.Errorf("%s/%s key %s: %w", cm.Namespace, cm.Name, key, err)
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b Snapshot) int { return a.Taken.Compare(b.Taken) })
	return out, nil
}

// Index is the API record.
type Index struct {
	Client kubernetes.Interface
	// Node is the node recording (the Events' source host).
	Node string
}

// Update records add and forgets remove in the index ConfigMap, creating it when missing and
// retrying on conflicts with another writer.
func (x Index) Update(ctx context.Context, add []Snapshot, remove []string) error {
	cms := x.Client.CoreV1().ConfigMaps(IndexNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, IndexName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data, err := applyIndex(nil, add, remove)
			if err != nil {
				return err
			}
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: IndexName, Namespace: IndexNamespace, Labels: map[string]string{"app.kubernetes.io/managed-by": Component}},
				Data:       data,
			}, metav1.CreateOptions{FieldManager: Component})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), IndexName, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		data, err := applyIndex(cm.Data, add, remove)
		if err != nil {
			return err
		}
		cm = cm.DeepCopy()
		cm.Data = data
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: Component})
		return err
	})
	if err != nil {
		return fmt.Errorf("update %s/%s: %w", IndexNamespace, IndexName, err)
	}
	return nil
}

// Event records one event on the index ConfigMap.
func (x Index) Event(ctx context.Context, now time.Time, eventType, reason, message string) error {
	ts := metav1.NewTime(now)
	ev := &corev1.Event{
		// Named as client-go's recorder names events (object, time), with a random tail because
		// a save and its prunes share one instant.
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x%s", IndexName, now.UnixNano(), utilrand.String(5)), Namespace: IndexNamespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "v1", Kind: "ConfigMap", Namespace: IndexNamespace, Name: IndexName,
		},
		Reason: reason, Message: message, Type: eventType,
		Source:         corev1.EventSource{Component: Component, Host: x.Node},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
		ReportingController: "skiff.sh/" + Component, ReportingInstance: Component + "-" + x.Node,
	}
	if _, err := x.Client.CoreV1().Events(IndexNamespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("event %s: %w", reason, err)
	}
	return nil
}
