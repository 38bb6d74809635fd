package kubelet

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// expandVars replaces $(NAME) with lookup(NAME) when defined; $$ escapes a
// dollar; references to undefined names and unterminated ones stay as they
// are, as Kubernetes does for env values, command and args.
func expandVars(input string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(input); i++ {
		if input[i] != '$' || i+1 >= len(input) {
			b.WriteByte(input[i])
			continue
		}
		switch input[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(input[i+2:], ')')
			if end < 0 {
				b.WriteString(input[i:])
				return b.String()
			}
			name := input[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(input[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// objectSource fetches the ConfigMaps and Secrets env refers to, once per
// sync.
type objectSource struct {
	ctx        context.Context
	client     kubernetes.Interface
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func newObjectSource(ctx context.Context, client kubernetes.Interface) *objectSource {
	return &objectSource{ctx: ctx, client: client, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
}

func (s *objectSource) configMap(namespace, name string) (*corev1.ConfigMap, error) {
	key := namespace + "/" + name
	if cm, ok := s.configMaps[key]; ok {
		return cm, nil
	}
	cm, err := s.client.CoreV1().ConfigMaps(namespace).Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s.configMaps[key] = cm
	return cm, nil
}

func (s *objectSource) secret(namespace, name string) (*corev1.Secret, error) {
	key := namespace + "/" + name
	if sec, ok := s.secrets[key]; ok {
		return sec, nil
	}
	sec, err := s.client.CoreV1().Secrets(namespace).Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s.secrets[key] = sec
	return sec, nil
}

// envInputs are the pod facts env and downward API values may refer to.
type envInputs struct {
	pod         *corev1.Pod
	podIPs      []string
	hostIPs     []string
	allocatable corev1.ResourceList
	// services are visible to the pod as environment variables.
	services []*corev1.Service
}

// resolveEnv computes a container's environment: envFrom sources in order,
// then env entries in order (later definitions win), with $(VAR) references
// expanded against the variables defined before them.
func resolveEnv(src *objectSource, in envInputs, c *corev1.Container) ([]corev1.EnvVar, error) {
	pod := in.pod
	values := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			order = append(order, name)
		}
		values[name] = value
	}
	for _, e := range serviceEnv(pod, in.services) {
		set(e.Name, e.Value)
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			optional := from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional
			cm, err := src.configMap(pod.Namespace, from.ConfigMapRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, fmt.Errorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			for _, key := range sortedKeys(cm.Data) {
				if name := from.Prefix + key; len(validation.IsEnvVarName(name)) == 0 {
					set(name, cm.Data[key])
				}
			}
		case from.SecretRef != nil:
			optional := from.SecretRef.Optional != nil && *from.SecretRef.Optional
			sec, err := src.secret(pod.Namespace, from.SecretRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && optional {
					continue
				}
				return nil, fmt.Errorf("secret %q not found", from.SecretRef.Name)
			}
			for _, key := range sortedKeys(sec.Data) {
				if name := from.Prefix + key; len(validation.IsEnvVarName(name)) == 0 {
					set(name, string(sec.Data[key]))
				}
			}
		}
	}
	lookup := func(name string) (string, bool) {
		v, ok := values[name]
		return v, ok
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expandVars(e.Value, lookup))
			continue
		}
		value, skip, err := envValueFrom(src, in, c, e)
		if err != nil {
			return nil, err
		}
		if !skip {
			set(e.Name, value)
		}
	}
	out := make([]corev1.EnvVar, 0, len(order))
	for _, name := range order {
		out = append(out, corev1.EnvVar{Name: name, Value: values[name]})
	}
	return out, nil
}

func envValueFrom(src *objectSource, in envInputs, c *corev1.Container, e corev1.EnvVar) (value string, skip bool, err error) {
	pod := in.pod
	from := e.ValueFrom
	switch {
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := src.configMap(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			if apierrors.IsNotFound(err) {
				return "", false, fmt.Errorf("configmap %q not found", ref.Name)
			}
			return "", false, fmt.Errorf("get configmap %s/%s: %w", pod.Namespace, ref.Name, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return v, false, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		sec, err := src.secret(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			if apierrors.IsNotFound(err) {
				return "", false, fmt.Errorf("secret %q not found", ref.Name)
			}
			return "", false, fmt.Errorf("get secret %s/%s: %w", pod.Namespace, ref.Name, err)
		}
		v, ok := sec.Data[ref.Key]
		if !ok {
			if optional {
				return "", true, nil
			}
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), false, nil
	case from.FieldRef != nil:
		v, err := podFieldValue(in, from.FieldRef.FieldPath)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := containerResourceValue(pod, c, in.allocatable, from.ResourceFieldRef)
		return v, false, err
	}
	return "", false, fmt.Errorf("env %s: unsupported valueFrom", e.Name)
}

// podFieldValue returns a downward API field of the pod.
func podFieldValue(in envInputs, path string) (string, error) {
	pod := in.pod
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	first := func(ips []string) string {
		if len(ips) == 0 {
			return ""
		}
		return ips[0]
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return first(in.hostIPs), nil
	case "status.hostIPs":
		return strings.Join(in.hostIPs, ","), nil
	case "status.podIP":
		return first(in.podIPs), nil
	case "status.podIPs":
		return strings.Join(in.podIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

// subscript parses "prefix['key']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// formatMap renders a map the way the downward API does: key="value" lines,
// sorted by key.
func formatMap(m map[string]string) string {
	var lines []string
	for _, k := range sortedKeys(m) {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

// containerResourceValue resolves a resourceFieldRef: limits default to the
// node's allocatable, values are divided by the divisor and rounded up.
func containerResourceValue(pod *corev1.Pod, self *corev1.Container, allocatable corev1.ResourceList, ref *corev1.ResourceFieldSelector) (string, error) {
	c := self
	if ref.ContainerName != "" && ref.ContainerName != self.Name {
		c = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				c = &pod.Spec.Containers[i]
			}
		}
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == ref.ContainerName {
				c = &pod.Spec.InitContainers[i]
			}
		}
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef: container %q not found", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		if ref.Resource == "cpu" || ref.Resource == "memory" || ref.Resource == "ephemeral-storage" {
			kind, name = "limits", ref.Resource
		} else {
			return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
		}
	}
	resName := corev1.ResourceName(name)
	var q resource.Quantity
	if kind == "limits" {
		var has bool
		q, has = c.Resources.Limits[resName]
		if !has {
			q = allocatable[resName]
		}
	} else {
		q = c.Resources.Requests[resName]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	switch resName {
	case corev1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	if strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
}
