package ingress

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

const (
	// ControllerName is the spec.controller of skiff's IngressClasses.
	ControllerName = "skiff.sh/ingress"
	// ClassName is the IngressClass skiff creates at start-up.
	ClassName = "skiff"
	// DefaultClassAnnotation marks the cluster's default IngressClass.
	DefaultClassAnnotation = networkingv1.AnnotationIsDefaultIngressClass
	// legacyClassAnnotation is the class annotation of Ingresses written before ingressClassName.
	legacyClassAnnotation = "kubernetes.io/ingress.class"

	// HTTPListener and HTTPSListener name the data plane's Ingress listeners.
	HTTPListener  = "ingress-http"
	HTTPSListener = "ingress-https"
)

// Input is everything Translate reads.
type Input struct {
	Classes   []*networkingv1.IngressClass
	Ingresses []*networkingv1.Ingress
	Services  []*corev1.Service
	Slices    []*discoveryv1.EndpointSlice
	// Secrets are looked up by the Ingresses' spec.tls; others are ignored.
	Secrets []*corev1.Secret
	// HTTPPort and HTTPSPort are the data plane's ports; zero leaves that listener out.
	HTTPPort  int32
	HTTPSPort int32
	// DefaultCertificate is served on HTTPS to a client whose SNI no Secret's certificate covers
	// (and to clients without SNI), as ingress controllers serve a default certificate.
	DefaultCertificate *tls.Certificate
}

// Problem is something wrong with one Ingress that Translate worked around.
type Problem struct {
	Namespace, Name string
	Message         string
}

func (p Problem) String() string {
	return fmt.Sprintf("Ingress %s/%s: %s", p.Namespace, p.Name, p.Message)
}

// Served reports whether ing is skiff's to serve: its spec.ingressClassName (or the legacy
// kubernetes.io/ingress.class annotation) names a class whose controller is skiff.sh/ingress;
// without either, the default class is skiff's, or no class is the default and the Ingress is
// served by skiff's default class `skiff` (the one skiff creates).
func Served(ing *networkingv1.Ingress, classes []*networkingv1.IngressClass) bool {
	name := ""
	if ing.Spec.IngressClassName != nil {
		name = *ing.Spec.IngressClassName
	} else if a, ok := ing.Annotations[legacyClassAnnotation]; ok {
		name = a
	}
	if name != "" {
		for _, c := range classes {
			if c.Name == name {
				return c.Spec.Controller == ControllerName
			}
		}
		return false
	}
	var defaults []*networkingv1.IngressClass
	for _, c := range classes {
		if c.Annotations[DefaultClassAnnotation] == "true" {
			defaults = append(defaults, c)
		}
	}
	if len(defaults) == 0 {
		return true
	}
	// Several defaults: the API server's admission would refuse to pick; skiff serves the Ingress
	// only if every default is its own, so it never takes one another controller may also serve.
	for _, c := range defaults {
		if c.Spec.Controller != ControllerName {
			return false
		}
	}
	return true
}

type keyed struct {
	services map[string]*corev1.Service
	slices   map[string][]*discoveryv1.EndpointSlice
	secrets  map[string]*corev1.Secret
}

func index(in *Input) keyed {
	k := keyed{services: map[string]*corev1.Service{}, slices: map[string][]*discoveryv1.EndpointSlice{}, secrets: map[string]*corev1.Secret{}}
	for _, s := range in.Services {
		k.services[s.Namespace+"/"+s.Name] = s
	}
	for _, s := range in.Slices {
		key := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
		k.slices[key] = append(k.slices[key], s)
	}
	for _, s := range in.Secrets {
		k.secrets[s.Namespace+"/"+s.Name] = s
	}
	return k
}

// Translate builds the data plane's table from the Ingresses skiff serves. Every served Ingress's
// hosts are on both listeners (HTTP and HTTPS); the HTTPS listener's certificates are the
// Secrets of the Ingresses' spec.tls, chosen by SNI, then DefaultCertificate. What cannot be
// served (a TLS Secret that is missing or does not parse, a resource backend) is reported as a
// Problem and left out, the rest of the Ingress still served; a backend Service that is missing
// or lacks the port stays in the table as an invalid backend (answered 500).
func Translate(in Input) (routes.Table, []Problem) {
	k := index(&in)
	var problems []Problem
	hosts := map[string]*routes.VirtualHost{}
	var certs []routes.Certificate
	ings := served(in.Ingresses, in.Classes)
	for _, ing := range ings {
		p := translateIngress(ing, &k, hosts)
		problems = append(problems, p...)
		c, p := ingressCertificates(ing, &k)
		certs = append(certs, c...)
		problems = append(problems, p...)
	}
	if in.DefaultCertificate != nil {
		certs = append(certs, routes.Certificate{Source: "default certificate", Cert: in.DefaultCertificate})
	}
	vhosts := make([]routes.VirtualHost, 0, len(hosts))
	for _, h := range hosts {
		routes.SortRoutes(h.Routes)
		vhosts = append(vhosts, *h)
	}
	sort.Slice(vhosts, func(i, j int) bool { return vhosts[i].Hostname < vhosts[j].Hostname })
	var t routes.Table
	if in.HTTPPort != 0 {
		t.Listeners = append(t.Listeners, routes.Listener{Name: HTTPListener, Port: in.HTTPPort, Protocol: routes.ProtocolHTTP, Hosts: vhosts})
	}
	if in.HTTPSPort != 0 {
		t.Listeners = append(t.Listeners, routes.Listener{Name: HTTPSListener, Port: in.HTTPSPort, Protocol: routes.ProtocolHTTPS, Hosts: vhosts, Certificates: certs})
	}
	sort.Slice(t.Listeners, func(i, j int) bool { return t.Listeners[i].Port < t.Listeners[j].Port })
	return t, problems
}

// served are the Ingresses skiff serves, oldest first (the order precedence ties go by).
func served(all []*networkingv1.Ingress, classes []*networkingv1.IngressClass) []*networkingv1.Ingress {
	var out []*networkingv1.Ingress
	for _, ing := range all {
		if ing.DeletionTimestamp == nil && Served(ing, classes) {
			out = append(out, ing)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out
}

func host(hosts map[string]*routes.VirtualHost, name string) *routes.VirtualHost {
	name = strings.ToLower(name)
	h, ok := hosts[name]
	if !ok {
		h = &routes.VirtualHost{Hostname: name, SingleLabelWildcard: strings.HasPrefix(name, "*.")}
		hosts[name] = h
	}
	return h
}

func translateIngress(ing *networkingv1.Ingress, k *keyed, hosts map[string]*routes.VirtualHost) []Problem {
	var problems []Problem
	src := routes.Source{Kind: routes.SourceIngress, Namespace: ing.Namespace, Name: ing.Name, Created: ing.CreationTimestamp.Time}
	// The default backend serves what no rule of the Ingress matches: every host it names and
	// any other host.
	var dflt *routes.Backend
	if db := ing.Spec.DefaultBackend; db != nil {
		b, p := backendOf(ing, db, k)
		problems = append(problems, p...)
		dflt = &b
	}
	ruleHosts := []string{""}
	for ri, rule := range ing.Spec.Rules {
		h := host(hosts, rule.Host)
		if rule.Host != "" {
			ruleHosts = append(ruleHosts, rule.Host)
		}
		if rule.HTTP == nil {
			continue
		}
		for pi, path := range rule.HTTP.Paths {
			b, p := backendOf(ing, &path.Backend, k)
			problems = append(problems, p...)
			s := src
			s.Rule, s.Match = ri, pi
			h.Routes = append(h.Routes, routes.Route{Source: s, Match: routes.Match{Path: pathMatch(path)}, Backends: []routes.Backend{b}})
		}
	}
	if dflt != nil {
		for _, name := range ruleHosts {
			s := src
			s.Default = true
			h := host(hosts, name)
			h.Routes = append(h.Routes, routes.Route{Source: s, Match: routes.Match{Path: routes.PathMatch{Type: routes.PathPrefix, Value: "/"}}, Backends: []routes.Backend{*dflt}})
		}
	}
	return problems
}

// pathMatch maps an Ingress path: Exact is exact, Prefix and ImplementationSpecific are
// element-wise prefixes (skiff's implementation-specific meaning is Prefix's); an empty path is
// "/".
func pathMatch(p networkingv1.HTTPIngressPath) routes.PathMatch {
	v := p.Path
	if v == "" {
		v = "/"
	}
	if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact {
		return routes.PathMatch{Type: routes.PathExact, Value: v}
	}
	return routes.PathMatch{Type: routes.PathPrefix, Value: v}
}

func backendOf(ing *networkingv1.Ingress, b *networkingv1.IngressBackend, k *keyed) (routes.Backend, []Problem) {
	if b.Service == nil {
		msg := "resource backends are not supported"
		if b.Resource != nil {
			msg = fmt.Sprintf("resource backend %s %s is not supported", b.Resource.Kind, b.Resource.Name)
		}
		return routes.Backend{Name: "resource", Weight: 1, Invalid: msg}, []Problem{{ing.Namespace, ing.Name, msg}}
	}
	key := ing.Namespace + "/" + b.Service.Name
	port := routes.ServicePort{Name: b.Service.Port.Name, Number: b.Service.Port.Number}
	return routes.ServiceBackend(ing.Namespace, b.Service.Name, port, k.services[key], k.slices[key]), nil
}

// ingressCertificates are the certificates of ing's spec.tls, for the hosts each entry lists
// (for any host when it lists none).
func ingressCertificates(ing *networkingv1.Ingress, k *keyed) ([]routes.Certificate, []Problem) {
	var certs []routes.Certificate
	var problems []Problem
	for _, t := range ing.Spec.TLS {
		if t.SecretName == "" {
			continue
		}
		s := k.secrets[ing.Namespace+"/"+t.SecretName]
		if s == nil {
			problems = append(problems, Problem{ing.Namespace, ing.Name, fmt.Sprintf("TLS secret %q not found", t.SecretName)})
			continue
		}
		c, err := routes.ParseCertificate(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			problems = append(problems, Problem{ing.Namespace, ing.Name, fmt.Sprintf("TLS secret %q: %v", t.SecretName, err)})
			continue
		}
		certs = append(certs, routes.Certificate{Hostnames: append([]string(nil), t.Hosts...), Source: "Secret " + s.Namespace + "/" + s.Name, Cert: c})
	}
	return certs, problems
}
