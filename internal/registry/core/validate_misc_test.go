package core

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"}
}

func clusterMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, ResourceVersion: "1"}
}

func TestValidateNamespace(t *testing.T) {
	requireNoErrors(t, ValidateNamespace(&corev1.Namespace{ObjectMeta: clusterMeta("team-a"), Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "example.com/cleanup"}}}))
	cases := []struct {
		ns   *corev1.Namespace
		want wantErr
	}{
		{&corev1.Namespace{ObjectMeta: clusterMeta("team.a")}, wantErr{"metadata.name", field.ErrorTypeInvalid, "must not contain dots"}},
		{&corev1.Namespace{ObjectMeta: clusterMeta("Team")}, wantErr{"metadata.name", field.ErrorTypeInvalid, "a lowercase RFC 1123 label"}},
		{&corev1.Namespace{ObjectMeta: clusterMeta("")}, wantErr{"metadata.name", field.ErrorTypeRequired, "name or generateName is required"}},
		{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b"}}, wantErr{"metadata.namespace", field.ErrorTypeForbidden, "not allowed on this type"}},
		{&corev1.Namespace{ObjectMeta: clusterMeta("a"), Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"cleanup"}}},
			wantErr{"spec.finalizers[0]", field.ErrorTypeInvalid, "name is neither a standard finalizer name nor is it fully qualified"}},
	}
	for _, c := range cases {
		requireError(t, ValidateNamespace(c.ns), c.want)
	}
}

func TestValidateNamespaceStatusUpdate(t *testing.T) {
	old := &corev1.Namespace{ObjectMeta: clusterMeta("a"), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	ns := old.DeepCopy()
	ns.Status.Phase = corev1.NamespaceTerminating
	requireError(t, ValidateNamespaceStatusUpdate(ns, old), wantErr{"status.Phase", field.ErrorTypeInvalid, "may only be 'Active' if `deletionTimestamp` is empty"})
	ns.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)}
	old.DeletionTimestamp = ns.DeletionTimestamp
	ns.DeletionGracePeriodSeconds, old.DeletionGracePeriodSeconds = ptrTo(int64(0)), ptrTo(int64(0))
	requireNoErrors(t, ValidateNamespaceStatusUpdate(ns, old))
}

func TestValidateNode(t *testing.T) {
	valid := &corev1.Node{ObjectMeta: clusterMeta("node-1.example.com"), Spec: corev1.NodeSpec{
		PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"},
		Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
	}}
	requireNoErrors(t, ValidateNode(valid))

	cases := []struct {
		name   string
		mutate func(*corev1.Node)
		want   wantErr
	}{
		{"taint effect", func(n *corev1.Node) { n.Spec.Taints[0].Effect = "" }, wantErr{"metadata.taints[0].effect", field.ErrorTypeRequired, ""}},
		{"taint key", func(n *corev1.Node) { n.Spec.Taints[0].Key = "bad key" }, wantErr{"metadata.taints[0].key", field.ErrorTypeInvalid, ""}},
		{"duplicate taint", func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, n.Spec.Taints[0]) },
			wantErr{"metadata.taints[1]", field.ErrorTypeDuplicate, "taints must be unique by key and effect pair"}},
		{"pod cidr", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/33"}; n.Spec.PodCIDR = "" }, wantErr{"spec.podCIDRs[0]", field.ErrorTypeInvalid, ""}},
		{"capacity", func(n *corev1.Node) { n.Status.Capacity = corev1.ResourceList{"cpu": qty("-1")} }, wantErr{"status.capacity[cpu]", field.ErrorTypeInvalid, ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := valid.DeepCopy()
			c.mutate(n)
			requireError(t, ValidateNode(n), c.want)
		})
	}

	updated := valid.DeepCopy()
	updated.Spec.PodCIDRs, updated.Spec.PodCIDR = []string{"10.244.2.0/24"}, "10.244.2.0/24"
	requireError(t, ValidateNodeUpdate(updated, valid), wantErr{"spec.podCIDRs", field.ErrorTypeForbidden, `node updates may not change podCIDR except from "" to valid`})
	oldWithoutCIDR := valid.DeepCopy()
	oldWithoutCIDR.Spec.PodCIDR, oldWithoutCIDR.Spec.PodCIDRs = "", nil
	requireNoErrors(t, ValidateNodeUpdate(valid, oldWithoutCIDR))
	withProvider := valid.DeepCopy()
	withProvider.Spec.ProviderID = "aws://a"
	changed := withProvider.DeepCopy()
	changed.Spec.ProviderID = "aws://b"
	requireError(t, ValidateNodeUpdate(changed, withProvider), wantErr{"spec.providerID", field.ErrorTypeForbidden, ""})
}

func TestValidateConfigMap(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"app.conf": "x", ".hidden": "y"}, BinaryData: map[string][]byte{"logo.png": {1}}}
	requireNoErrors(t, ValidateConfigMap(cm))

	bad := cm.DeepCopy()
	bad.Data["bad/key"] = "x"
	requireError(t, ValidateConfigMap(bad), wantErr{"data[bad/key]", field.ErrorTypeInvalid, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"})
	bad = cm.DeepCopy()
	bad.Data["logo.png"] = "x"
	requireError(t, ValidateConfigMap(bad), wantErr{"data[logo.png]", field.ErrorTypeInvalid, "duplicate of key present in binaryData"})
	bad = cm.DeepCopy()
	bad.Data["big"] = strings.Repeat("x", 1<<20)
	requireError(t, ValidateConfigMap(bad), wantErr{"[]", field.ErrorTypeTooLong, "may not be more than 1048576 bytes"})

	immutable := cm.DeepCopy()
	immutable.Immutable = ptrTo(true)
	edited := immutable.DeepCopy()
	edited.Data["app.conf"] = "changed"
	requireError(t, ValidateConfigMapUpdate(edited, immutable), wantErr{"data", field.ErrorTypeForbidden, "field is immutable when `immutable` is set"})
	reopened := immutable.DeepCopy()
	reopened.Immutable = ptrTo(false)
	requireError(t, ValidateConfigMapUpdate(reopened, immutable), wantErr{"immutable", field.ErrorTypeForbidden, "field is immutable when `immutable` is set"})
	labelled := immutable.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	requireNoErrors(t, ValidateConfigMapUpdate(labelled, immutable))
}

func TestValidateSecret(t *testing.T) {
	valid := []*corev1.Secret{
		{ObjectMeta: meta("opaque"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("x")}},
		{ObjectMeta: meta("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": {}, "tls.key": {}}},
		{ObjectMeta: meta("pull"), Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}},
		{ObjectMeta: meta("basic"), Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("u")}},
		{ObjectMeta: meta("custom"), Type: "example.com/custom"},
	}
	for _, s := range valid {
		requireNoErrors(t, ValidateSecret(s))
	}
	cases := []struct {
		secret *corev1.Secret
		want   wantErr
	}{
		{&corev1.Secret{ObjectMeta: meta("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": {}}}, wantErr{"data[tls.key]", field.ErrorTypeRequired, ""}},
		{&corev1.Secret{ObjectMeta: meta("pull"), Type: corev1.SecretTypeDockerConfigJson}, wantErr{"data[.dockerconfigjson]", field.ErrorTypeRequired, ""}},
		{&corev1.Secret{ObjectMeta: meta("pull"), Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}},
			wantErr{"data[.dockerconfigjson]", field.ErrorTypeInvalid, "<secret contents redacted>"}},
		{&corev1.Secret{ObjectMeta: meta("cfg"), Type: corev1.SecretTypeDockercfg}, wantErr{"data[.dockercfg]", field.ErrorTypeRequired, ""}},
		{&corev1.Secret{ObjectMeta: meta("basic"), Type: corev1.SecretTypeBasicAuth}, wantErr{"data[username]", field.ErrorTypeRequired, ""}},
		{&corev1.Secret{ObjectMeta: meta("ssh"), Type: corev1.SecretTypeSSHAuth}, wantErr{"data[ssh-privatekey]", field.ErrorTypeRequired, ""}},
		{&corev1.Secret{ObjectMeta: meta("sa"), Type: corev1.SecretTypeServiceAccountToken}, wantErr{"metadata.annotations[kubernetes.io/service-account.name]", field.ErrorTypeRequired, ""}},
		{&corev1.Secret{ObjectMeta: meta("big"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": make([]byte, 1<<20+1)}}, wantErr{"data", field.ErrorTypeTooLong, ""}},
		{&corev1.Secret{ObjectMeta: meta("key"), Data: map[string][]byte{"a b": nil}}, wantErr{"data[a b]", field.ErrorTypeInvalid, ""}},
	}
	for _, c := range cases {
		requireError(t, ValidateSecret(c.secret), c.want)
	}

	old := valid[0]
	retyped := old.DeepCopy()
	retyped.Type = corev1.SecretTypeBasicAuth
	retyped.Data["username"] = []byte("u")
	requireError(t, ValidateSecretUpdate(retyped, old), wantErr{"type", field.ErrorTypeInvalid, "field is immutable"})
	immutable := old.DeepCopy()
	immutable.Immutable = ptrTo(true)
	edited := immutable.DeepCopy()
	edited.Data["password"] = []byte("y")
	requireError(t, ValidateSecretUpdate(edited, immutable), wantErr{"data", field.ErrorTypeForbidden, "field is immutable when `immutable` is set"})
}

func TestValidateServiceAccount(t *testing.T) {
	requireNoErrors(t, ValidateServiceAccount(&corev1.ServiceAccount{ObjectMeta: meta("builder")}))
	requireError(t, ValidateServiceAccount(&corev1.ServiceAccount{ObjectMeta: meta("Builder")}), wantErr{"metadata.name", field.ErrorTypeInvalid, ""})
	requireError(t, ValidateServiceAccount(&corev1.ServiceAccount{ObjectMeta: meta("b"), ImagePullSecrets: []corev1.LocalObjectReference{{}}}),
		wantErr{"imagePullSecrets[0].name", field.ErrorTypeRequired, ""})
}

func TestValidateEvent(t *testing.T) {
	ev := &corev1.Event{ObjectMeta: meta("web.17a"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}, Reason: "Started", Type: corev1.EventTypeNormal}
	requireNoErrors(t, ValidateEvent(ev))
	clusterScoped := &corev1.Event{ObjectMeta: meta("node.1"), InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	requireNoErrors(t, ValidateEvent(clusterScoped))

	other := ev.DeepCopy()
	other.InvolvedObject.Namespace = "kube-system"
	requireError(t, ValidateEvent(other), wantErr{"involvedObject.namespace", field.ErrorTypeInvalid, "does not match event.namespace"})
	node := clusterScoped.DeepCopy()
	node.Namespace = "team"
	requireError(t, ValidateEvent(node), wantErr{"involvedObject.namespace", field.ErrorTypeInvalid, "does not match event.namespace"})
	long := ev.DeepCopy()
	long.Reason = strings.Repeat("r", 129)
	requireError(t, ValidateEvent(long), wantErr{"reason", field.ErrorTypeTooLong, ""})
}

func TestValidateEndpoints(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: meta("web"), Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5", NodeName: ptrTo("n1")}},
		Ports:     []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: "TCP"}, {Name: "https", Port: 443, Protocol: "TCP"}},
	}}}
	requireNoErrors(t, ValidateEndpoints(ep))
	cases := []struct {
		mutate func(*corev1.Endpoints)
		want   wantErr
	}{
		{func(e *corev1.Endpoints) { e.Subsets[0].Addresses = nil }, wantErr{"subsets[0]", field.ErrorTypeRequired, "must specify `addresses` or `notReadyAddresses`"}},
		{func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "127.0.0.1" }, wantErr{"subsets[0].addresses[0].ip", field.ErrorTypeInvalid, "may not be in the loopback range"}},
		{func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "nope" }, wantErr{"subsets[0].addresses[0].ip", field.ErrorTypeInvalid, ""}},
		{func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Name = "" }, wantErr{"subsets[0].ports[0].name", field.ErrorTypeRequired, ""}},
		{func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Port = 0 }, wantErr{"subsets[0].ports[0].port", field.ErrorTypeInvalid, ""}},
		{func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Protocol = "" }, wantErr{"subsets[0].ports[0].protocol", field.ErrorTypeRequired, ""}},
	}
	for _, c := range cases {
		e := ep.DeepCopy()
		c.mutate(e)
		requireError(t, ValidateEndpoints(e), c.want)
	}
}

func TestValidateLimitRange(t *testing.T) {
	lr := &corev1.LimitRange{ObjectMeta: meta("limits"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{"cpu": qty("100m")}, Max: corev1.ResourceList{"cpu": qty("2")}, Default: corev1.ResourceList{"cpu": qty("1")}, DefaultRequest: corev1.ResourceList{"cpu": qty("500m")}},
		{Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{"storage": qty("10Gi")}},
	}}}
	requireNoErrors(t, ValidateLimitRange(lr))
	cases := []struct {
		mutate func(*corev1.LimitRange)
		want   wantErr
	}{
		{func(l *corev1.LimitRange) { l.Spec.Limits[0].Min["cpu"] = qty("3") }, wantErr{"spec.limits[0].min[cpu]", field.ErrorTypeInvalid, "min value 3 is greater than max value 2"}},
		{func(l *corev1.LimitRange) { l.Spec.Limits[0].DefaultRequest["cpu"] = qty("1500m") },
			wantErr{"spec.limits[0].defaultRequest[cpu]", field.ErrorTypeInvalid, "default request value 1500m is greater than default limit value 1"}},
		{func(l *corev1.LimitRange) { l.Spec.Limits[0].Default["cpu"] = qty("3") }, wantErr{"spec.limits[0].default[cpu]", field.ErrorTypeInvalid, "default value 3 is greater than max value 2"}},
		{func(l *corev1.LimitRange) { l.Spec.Limits[0].Type = "Widget" }, wantErr{"spec.limits[0].type", field.ErrorTypeInvalid, "must be a standard limit type or fully qualified"}},
		{func(l *corev1.LimitRange) { l.Spec.Limits[1].Type = corev1.LimitTypeContainer }, wantErr{"spec.limits[1].type", field.ErrorTypeDuplicate, ""}},
		{func(l *corev1.LimitRange) { l.Spec.Limits[1].Max = nil }, wantErr{"spec.limits[1].limits", field.ErrorTypeRequired, "either minimum or maximum storage value is required"}},
		{func(l *corev1.LimitRange) {
			l.Spec.Limits = append(l.Spec.Limits, corev1.LimitRangeItem{Type: corev1.LimitTypePod, Default: corev1.ResourceList{"cpu": qty("1")}})
		}, wantErr{"spec.limits[2].default", field.ErrorTypeForbidden, "may not be specified when `type` is 'Pod'"}},
		{func(l *corev1.LimitRange) {
			l.Spec.Limits[0].MaxLimitRequestRatio = corev1.ResourceList{"cpu": qty("500m")}
		},
			wantErr{"spec.limits[0].maxLimitRequestRatio[cpu]", field.ErrorTypeInvalid, "ratio 500m is less than 1"}},
		{func(l *corev1.LimitRange) { l.Spec.Limits[0].Max["gpu"] = qty("1") }, wantErr{"spec.limits[0].max[gpu]", field.ErrorTypeInvalid, "must be a standard resource for containers"}},
	}
	for _, c := range cases {
		l := lr.DeepCopy()
		c.mutate(l)
		requireError(t, ValidateLimitRange(l), c.want)
	}
}

func TestValidateResourceQuota(t *testing.T) {
	q := &corev1.ResourceQuota{ObjectMeta: meta("quota"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		"pods": qty("10"), "requests.cpu": qty("4"), "limits.memory": qty("8Gi"), "count/deployments.apps": qty("5"),
	}}}
	requireNoErrors(t, ValidateResourceQuota(q))
	cases := []struct {
		mutate func(*corev1.ResourceQuota)
		want   wantErr
	}{
		{func(r *corev1.ResourceQuota) { r.Spec.Hard["pods"] = qty("-1") }, wantErr{"spec.hard[pods]", field.ErrorTypeInvalid, "must be greater than or equal to 0"}},
		{func(r *corev1.ResourceQuota) { r.Spec.Hard["pods"] = qty("1.5") }, wantErr{"spec.hard[pods]", field.ErrorTypeInvalid, "must be an integer"}},
		{func(r *corev1.ResourceQuota) { r.Spec.Hard["widgets"] = qty("1") }, wantErr{"spec.hard[widgets]", field.ErrorTypeInvalid, "must be a standard resource for quota"}},
		{func(r *corev1.ResourceQuota) { r.Spec.Scopes = []corev1.ResourceQuotaScope{"Sometimes"} }, wantErr{"spec.scopes", field.ErrorTypeInvalid, "unsupported scope"}},
		{func(r *corev1.ResourceQuota) {
			r.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort}
		}, wantErr{"spec.scopes", field.ErrorTypeInvalid, "conflicting scopes"}},
		{func(r *corev1.ResourceQuota) {
			r.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn}}}
		}, wantErr{"spec.scopeSelector.matchExpressions.values", field.ErrorTypeRequired, "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"}},
	}
	for _, c := range cases {
		r := q.DeepCopy()
		c.mutate(r)
		requireError(t, ValidateResourceQuota(r), c.want)
	}
	rescoped := q.DeepCopy()
	rescoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
	requireError(t, ValidateResourceQuotaUpdate(rescoped, q), wantErr{"spec.scopes", field.ErrorTypeInvalid, "field is immutable"})

	status := q.DeepCopy()
	status.Status.Used = corev1.ResourceList{"pods": qty("-2")}
	requireError(t, ValidateResourceQuotaStatusUpdate(status, q), wantErr{"status.used[pods]", field.ErrorTypeInvalid, ""})
}
