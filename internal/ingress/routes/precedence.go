package routes

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
)

// pathRank orders path match types: Exact first, then RegularExpression (Gateway API leaves its
// place to the implementation; skiff ranks it below Exact and above every prefix, as Envoy-based
// implementations do, so a regular expression is not shadowed by a "/" prefix), then PathPrefix.
func pathRank(p PathMatch) int {
	switch p.Type {
	case PathExact:
		return 0
	case PathRegularExpression:
		return 1
	default:
		return 2
	}
}

// prefixValue is the prefix a path match compares, "/" for the zero PathMatch.
func prefixValue(p PathMatch) string {
	if p.Type == "" {
		return "/"
	}
	return p.Value
}

// Precedes reports whether route a is tried before route b within one virtual host. It is
// Gateway API's HTTPRoute precedence, the one rule for Ingress and HTTPRoute alike:
//
//  1. an Ingress default backend after every other route;
//  2. an Exact path match, then a RegularExpression one, then a PathPrefix one;
//  3. the longer path value (so the longest prefix wins);
//  4. a match with a method over one without;
//  5. more header matches;
//  6. more query parameter matches;
//  7. the older source object, then "{namespace}/{name}" in alphabetical order, then the kind;
//  8. within one object, the earlier rule, then the earlier match.
func Precedes(a, b *Route) bool {
	if a.Source.Default != b.Source.Default {
		return !a.Source.Default
	}
	if ra, rb := pathRank(a.Match.Path), pathRank(b.Match.Path); ra != rb {
		return ra < rb
	}
	if la, lb := len(prefixValue(a.Match.Path)), len(prefixValue(b.Match.Path)); la != lb {
		return la > lb
	}
	if ma, mb := a.Match.Method != "", b.Match.Method != ""; ma != mb {
		return ma
	}
	if ha, hb := len(a.Match.Headers), len(b.Match.Headers); ha != hb {
		return ha > hb
	}
	if qa, qb := len(a.Match.QueryParams), len(b.Match.QueryParams); qa != qb {
		return qa > qb
	}
	sa, sb := &a.Source, &b.Source
	if !sa.Created.Equal(sb.Created) {
		return sa.Created.Before(sb.Created)
	}
	if na, nb := sa.Namespace+"/"+sa.Name, sb.Namespace+"/"+sb.Name; na != nb {
		return na < nb
	}
	if sa.Kind != sb.Kind {
		return sa.Kind < sb.Kind
	}
	if sa.Rule != sb.Rule {
		return sa.Rule < sb.Rule
	}
	return sa.Match < sb.Match
}

// SortRoutes puts routes in precedence order (Precedes), stably.
func SortRoutes(rs []Route) {
	sort.SliceStable(rs, func(i, j int) bool { return Precedes(&rs[i], &rs[j]) })
}

// hostScore says how well pattern matches host, higher being better; -1 when it does not
// match. An exact name beats any wildcard, a longer wildcard suffix beats a shorter one, and ""
// (any host) matches last. This is Gateway API's hostname precedence (characters in a matching
// non-wildcard hostname, then in a matching hostname).
func hostScore(pattern string, singleLabel bool, host string) int {
	switch {
	case pattern == "" || pattern == "*":
		return 0
	case strings.HasPrefix(pattern, "*."):
		suffix := pattern[1:] // ".example.com"
		if !strings.HasSuffix(host, suffix) || len(host) == len(suffix) {
			return -1
		}
		if singleLabel && strings.Contains(host[:len(host)-len(suffix)], ".") {
			return -1
		}
		return 1 + len(suffix)
	case strings.EqualFold(pattern, host):
		// Above any wildcard, whose score is at most 1+len(host).
		return 2 + 2*len(host)
	default:
		return -1
	}
}

// NormalizeHost lower-cases a Host header or SNI name and strips its port and a trailing dot.
func NormalizeHost(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// SelectHost returns the index of the virtual host that serves host (already normalized), or -1
// when none does: the most specific matching hostname wins, and only its routes are tried.
func SelectHost(hosts []VirtualHost, host string) int {
	best, bestScore := -1, -1
	for i := range hosts {
		s := hostScore(strings.ToLower(hosts[i].Hostname), hosts[i].SingleLabelWildcard, host)
		if s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// SelectCertificate returns the certificate for an SNI server name (already normalized): the
// most specific one whose Hostnames match, else the first default one (no Hostnames), else the
// first one; nil when there is none.
func SelectCertificate(certs []Certificate, serverName string) *Certificate {
	var best, def *Certificate
	bestScore := 0
	for i := range certs {
		c := &certs[i]
		if len(c.Hostnames) == 0 && def == nil {
			def = c
		}
		for _, h := range c.Hostnames {
			if s := hostScore(strings.ToLower(h), false, serverName); s > bestScore {
				best, bestScore = c, s
			}
		}
	}
	switch {
	case best != nil:
		return best
	case def != nil:
		return def
	case len(certs) > 0:
		return &certs[0]
	}
	return nil
}

// ParseCertificate parses a PEM certificate chain and key (a kubernetes.io/tls Secret's tls.crt
// and tls.key) and records the names of the leaf.
func ParseCertificate(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse key pair: %w", err)
	}
	return &c, nil
}

// Merge combines tables into one: listeners of the same address and port become one (the
// first's name and protocol), their certificates concatenated, virtual hosts of the same hostname
// merged and their routes put in precedence order. Ingress and Gateway controllers each build a table; the data
// plane serves their merge.
func Merge(tables ...Table) Table {
	byKey := map[ListenerKey]int{}
	var out Table
	for _, t := range tables {
		for _, l := range t.Listeners {
			i, ok := byKey[l.Key()]
			if !ok {
				byKey[l.Key()] = len(out.Listeners)
				out.Listeners = append(out.Listeners, Listener{Name: l.Name, Address: l.Address, Port: l.Port, Protocol: l.Protocol})
				i = len(out.Listeners) - 1
			}
			ol := &out.Listeners[i]
			ol.Certificates = append(ol.Certificates, l.Certificates...)
			ol.Hosts = mergeHosts(ol.Hosts, l.Hosts)
		}
	}
	sort.Slice(out.Listeners, func(i, j int) bool {
		a, b := out.Listeners[i], out.Listeners[j]
		return a.Port < b.Port || (a.Port == b.Port && a.Address < b.Address)
	})
	for i := range out.Listeners {
		for j := range out.Listeners[i].Hosts {
			SortRoutes(out.Listeners[i].Hosts[j].Routes)
		}
	}
	return out
}

func mergeHosts(into, from []VirtualHost) []VirtualHost {
	for _, h := range from {
		found := false
		for k := range into {
			if strings.EqualFold(into[k].Hostname, h.Hostname) && into[k].SingleLabelWildcard == h.SingleLabelWildcard {
				into[k].Routes = append(append([]Route(nil), into[k].Routes...), h.Routes...)
				found = true
				break
			}
		}
		if !found {
			h.Routes = append([]Route(nil), h.Routes...)
			into = append(into, h)
		}
	}
	return into
}
