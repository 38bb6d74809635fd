package ingress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ingressBuilder makes test Ingresses: newIngress("a").Class("skiff").Rule(...).Obj().
type ingressBuilder struct{ ing *networkingv1.Ingress }

func newIngress(name string) *ingressBuilder {
	return &ingressBuilder{&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(t0)}}}
}

func (b *ingressBuilder) Class(c string) *ingressBuilder { b.ing.Spec.IngressClassName = &c; return b }
func (b *ingressBuilder) Created(t time.Time) *ingressBuilder {
	b.ing.CreationTimestamp = metav1.NewTime(t)
	return b
}
func (b *ingressBuilder) Annotate(k, v string) *ingressBuilder {
	if b.ing.Annotations == nil {
		b.ing.Annotations = map[string]string{}
	}
	b.ing.Annotations[k] = v
	return b
}

func svcBackend(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func (b *ingressBuilder) Path(host, path string, typ networkingv1.PathType, svc string) *ingressBuilder {
	var rule *networkingv1.IngressRule
	for i := range b.ing.Spec.Rules {
		if b.ing.Spec.Rules[i].Host == host {
			rule = &b.ing.Spec.Rules[i]
		}
	}
	if rule == nil {
		b.ing.Spec.Rules = append(b.ing.Spec.Rules, networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}})
		rule = &b.ing.Spec.Rules[len(b.ing.Spec.Rules)-1]
	}
	rule.HTTP.Paths = append(rule.HTTP.Paths, networkingv1.HTTPIngressPath{Path: path, PathType: ptr.To(typ), Backend: svcBackend(svc, 80)})
	return b
}

func (b *ingressBuilder) Default(svc string) *ingressBuilder {
	be := svcBackend(svc, 80)
	b.ing.Spec.DefaultBackend = &be
	return b
}

func (b *ingressBuilder) TLS(secret string, hosts ...string) *ingressBuilder {
	b.ing.Spec.TLS = append(b.ing.Spec.TLS, networkingv1.IngressTLS{Hosts: hosts, SecretName: secret})
	return b
}

func (b *ingressBuilder) Obj() *networkingv1.Ingress { return b.ing }

func class(name, controller string, isDefault bool) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
	if isDefault {
		c.Annotations = map[string]string{DefaultClassAnnotation: "true"}
	}
	return c
}

func service(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

func endpoints(svc string, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

func tlsSecret(t *testing.T, name, cn string) *corev1.Secret {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, DNSNames: []string{cn}, NotBefore: t0, NotAfter: t0.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}),
	}}
}

// summary renders a listener's routes as "host: TYPE value -> backend [endpoints]" lines.
func summary(l routes.Listener) []string {
	var out []string
	for _, h := range l.Hosts {
		for _, r := range h.Routes {
			b := r.Backends[0]
			target := b.Name
			if b.Invalid != "" {
				target += " invalid"
			}
			for _, e := range b.Endpoints {
				target += " " + e.Address
			}
			line := h.Hostname + ": " + string(r.Match.Path.Type) + " " + r.Match.Path.Value + " -> " + target
			if r.Source.Default {
				line += " (default)"
			}
			out = append(out, line)
		}
	}
	return out
}

func TestTranslate(t *testing.T) {
	skiff := class(ClassName, ControllerName, false)
	other := class("nginx", "k8s.io/ingress-nginx", false)
	svcs := []*corev1.Service{service("web"), service("api"), service("fallback")}
	slices := []*discoveryv1.EndpointSlice{endpoints("web", "10.0.0.1"), endpoints("api", "10.0.0.2", "10.0.0.3"), endpoints("fallback", "10.0.0.9")}
	cases := []struct {
		name    string
		classes []*networkingv1.IngressClass
		ings    []*networkingv1.Ingress
		want    []string
	}{
		{
			name:    "host and path rules by type",
			classes: []*networkingv1.IngressClass{skiff},
			ings: []*networkingv1.Ingress{newIngress("a").Class("skiff").
				Path("a.test", "/", networkingv1.PathTypePrefix, "web").
				Path("a.test", "/api", networkingv1.PathTypeImplementationSpecific, "api").
				Path("a.test", "/exact", networkingv1.PathTypeExact, "api").
				Path("", "/any", networkingv1.PathTypePrefix, "web").Obj()},
			want: []string{
				": PathPrefix /any -> ns/web:80 10.0.0.1:8080",
				"a.test: Exact /exact -> ns/api:80 10.0.0.2:8080 10.0.0.3:8080",
				"a.test: PathPrefix /api -> ns/api:80 10.0.0.2:8080 10.0.0.3:8080",
				"a.test: PathPrefix / -> ns/web:80 10.0.0.1:8080",
			},
		},
		{
			name:    "default backend below the rules of its hosts and for any host",
			classes: []*networkingv1.IngressClass{skiff},
			ings: []*networkingv1.Ingress{
				newIngress("a").Class("skiff").Default("fallback").Path("a.test", "/app", networkingv1.PathTypePrefix, "web").Obj(),
			},
			want: []string{
				": PathPrefix / -> ns/fallback:80 10.0.0.9:8080 (default)",
				"a.test: PathPrefix /app -> ns/web:80 10.0.0.1:8080",
				"a.test: PathPrefix / -> ns/fallback:80 10.0.0.9:8080 (default)",
			},
		},
		{
			name:    "two Ingresses on one host: longest prefix first, then the older",
			classes: []*networkingv1.IngressClass{skiff},
			ings: []*networkingv1.Ingress{
				newIngress("new").Class("skiff").Created(t0.Add(time.Minute)).Path("a.test", "/", networkingv1.PathTypePrefix, "api").Obj(),
				newIngress("old").Class("skiff").Path("a.test", "/", networkingv1.PathTypePrefix, "web").Path("a.test", "/x", networkingv1.PathTypePrefix, "fallback").Obj(),
			},
			want: []string{
				"a.test: PathPrefix /x -> ns/fallback:80 10.0.0.9:8080",
				"a.test: PathPrefix / -> ns/web:80 10.0.0.1:8080",
				"a.test: PathPrefix / -> ns/api:80 10.0.0.2:8080 10.0.0.3:8080",
			},
		},
		{
			name:    "an Ingress of another class is ignored",
			classes: []*networkingv1.IngressClass{skiff, other},
			ings: []*networkingv1.Ingress{
				newIngress("nginx").Class("nginx").Path("n.test", "/", networkingv1.PathTypePrefix, "api").Obj(),
				newIngress("legacy-nginx").Annotate(legacyClassAnnotation, "nginx").Path("l.test", "/", networkingv1.PathTypePrefix, "api").Obj(),
				newIngress("unknown").Class("gone").Path("u.test", "/", networkingv1.PathTypePrefix, "api").Obj(),
				newIngress("legacy-skiff").Annotate(legacyClassAnnotation, "skiff").Path("s.test", "/", networkingv1.PathTypePrefix, "web").Obj(),
			},
			want: []string{"s.test: PathPrefix / -> ns/web:80 10.0.0.1:8080"},
		},
		{
			name:    "no class set and no default class: skiff's",
			classes: []*networkingv1.IngressClass{skiff, other},
			ings:    []*networkingv1.Ingress{newIngress("a").Path("a.test", "/", networkingv1.PathTypePrefix, "web").Obj()},
			want:    []string{"a.test: PathPrefix / -> ns/web:80 10.0.0.1:8080"},
		},
		{
			name:    "no class set and skiff's class is the default",
			classes: []*networkingv1.IngressClass{class(ClassName, ControllerName, true), other},
			ings:    []*networkingv1.Ingress{newIngress("a").Path("a.test", "/", networkingv1.PathTypePrefix, "web").Obj()},
			want:    []string{"a.test: PathPrefix / -> ns/web:80 10.0.0.1:8080"},
		},
		{
			name:    "no class set and another class is the default",
			classes: []*networkingv1.IngressClass{skiff, class("nginx", "k8s.io/ingress-nginx", true)},
			ings:    []*networkingv1.Ingress{newIngress("a").Path("a.test", "/", networkingv1.PathTypePrefix, "web").Obj()},
		},
		{
			name:    "a class of skiff's controller by another name",
			classes: []*networkingv1.IngressClass{class("internal", ControllerName, false)},
			ings:    []*networkingv1.Ingress{newIngress("a").Class("internal").Path("a.test", "/", networkingv1.PathTypePrefix, "web").Obj()},
			want:    []string{"a.test: PathPrefix / -> ns/web:80 10.0.0.1:8080"},
		},
		{
			name:    "a missing Service or port stays as an invalid backend; wildcard hosts cover one label",
			classes: []*networkingv1.IngressClass{skiff},
			ings:    []*networkingv1.Ingress{newIngress("a").Class("skiff").Path("*.a.test", "/", networkingv1.PathTypePrefix, "gone").Obj()},
			want:    []string{"*.a.test: PathPrefix / -> ns/gone:80 invalid"},
		},
		{
			name:    "a deleted Ingress is not served",
			classes: []*networkingv1.IngressClass{skiff},
			ings: []*networkingv1.Ingress{func() *networkingv1.Ingress {
				i := newIngress("a").Class("skiff").Path("a.test", "/", networkingv1.PathTypePrefix, "web").Obj()
				i.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
				return i
			}()},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, problems := Translate(Input{Classes: c.classes, Ingresses: c.ings, Services: svcs, Slices: slices, HTTPPort: 80, HTTPSPort: 443})
			if len(problems) != 0 {
				t.Fatalf("problems: %v", problems)
			}
			if len(tbl.Listeners) != 2 || tbl.Listeners[0].Port != 80 || tbl.Listeners[1].Port != 443 || tbl.Listeners[1].Protocol != routes.ProtocolHTTPS {
				t.Fatalf("listeners: %+v", tbl.Listeners)
			}
			got := summary(tbl.Listeners[0])
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("routes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if https := summary(tbl.Listeners[1]); strings.Join(https, "\n") != strings.Join(got, "\n") {
				t.Fatalf("HTTPS routes differ from HTTP's:\n%s", strings.Join(https, "\n"))
			}
		})
	}
}

func TestTranslateTLS(t *testing.T) {
	skiff := class(ClassName, ControllerName, false)
	a, b := tlsSecret(t, "a-tls", "a.test"), tlsSecret(t, "b-tls", "b.test")
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad"}, Data: map[string][]byte{corev1.TLSCertKey: []byte("nope")}}
	other := tlsSecret(t, "a-tls", "other.test")
	other.Namespace = "elsewhere"
	ing := newIngress("a").Class("skiff").
		Path("a.test", "/", networkingv1.PathTypePrefix, "web").Path("b.test", "/", networkingv1.PathTypePrefix, "web").
		TLS("a-tls", "a.test").TLS("b-tls", "b.test").TLS("bad", "c.test").TLS("missing", "d.test").Obj()
	dflt := tlsSecret(t, "default", "skiff default")
	dc, err := routes.ParseCertificate(dflt.Data[corev1.TLSCertKey], dflt.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	tbl, problems := Translate(Input{Classes: []*networkingv1.IngressClass{skiff}, Ingresses: []*networkingv1.Ingress{ing},
		Services: []*corev1.Service{service("web")}, Secrets: []*corev1.Secret{other, a, b, bad}, HTTPSPort: 8443, DefaultCertificate: dc})
	if len(problems) != 2 || !strings.Contains(problems[0].Message, `"bad"`) || !strings.Contains(problems[1].Message, `"missing" not found`) {
		t.Fatalf("problems = %v, want the bad and the missing secret's", problems)
	}
	if len(tbl.Listeners) != 1 || tbl.Listeners[0].Port != 8443 {
		t.Fatalf("listeners: %+v (HTTPPort 0 leaves HTTP out)", tbl.Listeners)
	}
	certs := tbl.Listeners[0].Certificates
	for sni, want := range map[string]string{"a.test": "a.test", "b.test": "b.test", "c.test": "skiff default", "": "skiff default"} {
		c := routes.SelectCertificate(certs, sni)
		if c == nil {
			t.Fatalf("no certificate for %q", sni)
		}
		leaf, err := x509.ParseCertificate(c.Cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if leaf.Subject.CommonName != want {
			t.Errorf("SNI %q: certificate %q, want %q", sni, leaf.Subject.CommonName, want)
		}
	}
}
