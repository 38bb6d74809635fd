package deployment

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Annotations and labels Kubernetes' deployment controller writes; kubectl
// reads them (rollout history/undo).
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	PodTemplateHashLabel      = appsv1.DefaultDeploymentUniqueLabelKey
	lastAppliedAnnotation     = corev1.LastAppliedConfigAnnotation
	rollbackToAnnotation      = "deprecated.deployment.rollback.to"
)

// Condition reasons, as Kubernetes spells them.
const (
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonReplicaSetCreateError      = "ReplicaSetCreateError"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// podTemplateHash is a stable short hash of the template (plus the collision
// count, bumped when a hash names someone else's ReplicaSet).
func podTemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	data, _ := json.Marshal(template) // a PodTemplateSpec always marshals
	h.Write(data)
	if collisionCount != nil {
		var buf [4]byte
		binary.LittleEndian.PutUint32(buf[:], uint32(*collisionCount))
		h.Write(buf[:])
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// equalIgnoreHash compares templates ignoring the pod-template-hash label.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, PodTemplateHashLabel)
	delete(b.Labels, PodTemplateHashLabel)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

func replicasOf(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func revisionOf(obj metav1.Object) int64 {
	v, err := strconv.ParseInt(obj.GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// fenceposts resolves maxSurge and maxUnavailable against replicas: surge
// rounds up, unavailable down, and both zero means one unavailable.
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil {
		return 0, 0
	}
	replicas := int(replicasOf(d.Spec.Replicas))
	ru := d.Spec.Strategy.RollingUpdate
	s, errS := intstr.GetScaledValueFromIntOrPercent(orDefault(ru.MaxSurge), replicas, true)
	u, errU := intstr.GetScaledValueFromIntOrPercent(orDefault(ru.MaxUnavailable), replicas, false)
	if errS != nil {
		s = 0
	}
	if errU != nil {
		u = 0
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u)
}

func orDefault(v *intstr.IntOrString) *intstr.IntOrString {
	if v == nil {
		q := intstr.FromString("25%")
		return &q
	}
	return v
}

func maxSurge(d *appsv1.Deployment) int32 {
	s, _ := fenceposts(d)
	return s
}

func maxUnavailable(d *appsv1.Deployment) int32 {
	replicas := replicasOf(d.Spec.Replicas)
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || replicas == 0 {
		return 0
	}
	_, u := fenceposts(d)
	return min(u, replicas)
}

func sumSpecReplicas(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += replicasOf(rs.Spec.Replicas)
		}
	}
	return n
}

func sumStatus(sets []*appsv1.ReplicaSet, field func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += field(&rs.Status)
		}
	}
	return n
}

func activeSets(sets []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range sets {
		if rs != nil && replicasOf(rs.Spec.Replicas) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func byCreation(sets []*appsv1.ReplicaSet) {
	sort.SliceStable(sets, func(i, j int) bool {
		if sets[i].CreationTimestamp.Equal(&sets[j].CreationTimestamp) {
			return sets[i].Name < sets[j].Name
		}
		return sets[i].CreationTimestamp.Before(&sets[j].CreationTimestamp)
	})
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// copyAnnotationsToReplicaSet copies the deployment's annotations (change-cause
// among them) except the ones the controller owns per ReplicaSet.
func copyAnnotationsToReplicaSet(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		switch k {
		case lastAppliedAnnotation, RevisionAnnotation, RevisionHistoryAnnotation, DesiredReplicasAnnotation, MaxReplicasAnnotation, rollbackToAnnotation:
			continue
		}
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// setNewReplicaSetAnnotations brings the new ReplicaSet's annotations up to
// date: copied deployment annotations, the new revision (remembering the
// old one in revision-history when a rollback reuses a ReplicaSet), and the
// replica annotations when missing.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyAnnotationsToReplicaSet(d, rs)
	oldRevision := rs.Annotations[RevisionAnnotation]
	oldInt, errOld := strconv.ParseInt(oldRevision, 10, 64)
	newInt, _ := strconv.ParseInt(newRevision, 10, 64)
	if oldRevision == "" || (errOld == nil && oldInt < newInt) {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if oldRevision != "" {
			history := rs.Annotations[RevisionHistoryAnnotation]
			if history == "" {
				history = oldRevision
			} else {
				history = strings.Join([]string{history, oldRevision}, ",")
			}
			rs.Annotations[RevisionHistoryAnnotation] = history
		}
	}
	if !exists && setReplicasAnnotations(rs, replicasOf(d.Spec.Replicas), replicasOf(d.Spec.Replicas)+maxSurge(d)) {
		changed = true
	}
	return changed
}

func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation] = d
	rs.Annotations[MaxReplicasAnnotation] = m
	return true
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

func getCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: message, LastUpdateTime: ts, LastTransitionTime: ts}
}

// setCondition replaces the condition of c's type unless status and reason are
// unchanged; a same-status change keeps the old lastTransitionTime.
func setCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(status, c.Type)
	status.Conditions = append(status.Conditions, c)
}

func removeCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range status.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	status.Conditions = kept
}

// complete: every replica updated and available, and the spec observed.
func complete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	r := replicasOf(d.Spec.Replicas)
	return s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r && s.ObservedGeneration >= d.Generation
}

// progressing: something moved since the last recorded status.
func progressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	old := d.Status
	return s.UpdatedReplicas > old.UpdatedReplicas ||
		s.Replicas-s.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		s.ReadyReplicas > old.ReadyReplicas ||
		s.AvailableReplicas > old.AvailableReplicas
}

func timedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(s, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewReplicaSetAvailable {
		return false
	}
	if c.Reason == ReasonProgressDeadlineExceeded {
		return true
	}
	deadline := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}
