package kubelet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// serviceEnv returns the docker-links style variables of the services a
// pod sees: always the API server's "kubernetes" service from the default
// namespace, and with enableServiceLinks (the default) every service of the
// pod's namespace.
func serviceEnv(pod *corev1.Pod, services []*corev1.Service) []corev1.EnvVar {
	byName := map[string]*corev1.Service{}
	enableLinks := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	for _, svc := range services {
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		switch {
		case svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes":
			if _, taken := byName[svc.Name]; !taken || pod.Namespace != metav1.NamespaceDefault {
				byName[svc.Name] = svc
			}
		case svc.Namespace == pod.Namespace && enableLinks:
			byName[svc.Name] = svc
		}
	}
	var out []corev1.EnvVar
	for _, name := range sortedKeys(byName) {
		out = append(out, envForService(byName[name])...)
	}
	return out
}

func envForService(svc *corev1.Service) []corev1.EnvVar {
	prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
	ip := svc.Spec.ClusterIP
	if len(svc.Spec.Ports) == 0 {
		return []corev1.EnvVar{{Name: prefix + "_SERVICE_HOST", Value: ip}}
	}
	first := svc.Spec.Ports[0]
	out := []corev1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(first.Port))},
	}
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			out = append(out, corev1.EnvVar{Name: prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), Value: strconv.Itoa(int(p.Port))})
		}
	}
	proto := strings.ToLower(string(first.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	out = append(out, corev1.EnvVar{Name: prefix + "_PORT", Value: fmt.Sprintf("%s://%s", proto, joinHostPort(ip, first.Port))})
	for _, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		base := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		out = append(out,
			corev1.EnvVar{Name: base, Value: fmt.Sprintf("%s://%s", proto, joinHostPort(ip, p.Port))},
			corev1.EnvVar{Name: base + "_PROTO", Value: proto},
			corev1.EnvVar{Name: base + "_PORT", Value: strconv.Itoa(int(p.Port))},
			corev1.EnvVar{Name: base + "_ADDR", Value: ip},
		)
	}
	return out
}

func joinHostPort(ip string, port int32) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(int(port))
	}
	return ip + ":" + strconv.Itoa(int(port))
}

// servicesFor lists the services serviceEnv may need, from the informer.
func servicesFor(lister corelisters.ServiceLister, namespace string) []*corev1.Service {
	if lister == nil {
		return nil
	}
	var out []*corev1.Service
	if list, err := lister.Services(namespace).List(labels.Everything()); err == nil {
		out = append(out, list...)
	}
	if namespace != metav1.NamespaceDefault {
		if svc, err := lister.Services(metav1.NamespaceDefault).Get("kubernetes"); err == nil {
			out = append(out, svc)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Service) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	return out
}
