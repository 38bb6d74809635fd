package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
)

// Cache limits; CoreDNS's cache plugin caps at 3600 s and 1800 s, kept shorter here so that a
// changed upstream record is seen within minutes.
const (
	DefaultMaxTTL         = 300 * time.Second
	DefaultMaxNegativeTTL = 60 * time.Second
	DefaultCacheEntries   = 10000
	defaultUpstreamWait   = 2 * time.Second
	upstreamUDPSize       = 4096
)

// UpstreamsFromResolvConf reads the nameservers of a resolv.conf as host:port addresses.
func UpstreamsFromResolvConf(path string) ([]string, error) {
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("read upstream resolvers from %s: %w", path, err)
	}
	var out []string
	for _, s := range cc.Servers {
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	return out, nil
}

// CacheTTL decides how long an upstream answer may be cached: positive answers for their
// smallest TTL, NXDOMAIN and NODATA for the SOA's negative TTL (the smaller of its TTL and
// minimum, RFC 2308), each capped. Truncated answers, failures and negative answers without a
// SOA are not cached (ok false).
func CacheTTL(m *dns.Msg, maxTTL, maxNegative time.Duration) (time.Duration, bool) {
	if m == nil || m.Truncated {
		return 0, false
	}
	capped := func(ttl uint32, limit time.Duration) (time.Duration, bool) {
		d := time.Duration(ttl) * time.Second
		if d > limit {
			d = limit
		}
		return d, d > 0
	}
	negative := m.Rcode == dns.RcodeNameError || (m.Rcode == dns.RcodeSuccess && len(m.Answer) == 0)
	switch {
	case negative:
		for _, rr := range m.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				return capped(min(soa.Hdr.Ttl, soa.Minttl), maxNegative)
			}
		}
		return 0, false
	case m.Rcode == dns.RcodeSuccess:
		least := m.Answer[0].Header().Ttl
		for _, section := range [][]dns.RR{m.Answer, m.Ns} {
			for _, rr := range section {
				least = min(least, rr.Header().Ttl)
			}
		}
		return capped(least, maxTTL)
	}
	return 0, false
}

type cacheKey struct {
	name         string
	qtype, class uint16
	do           bool
}

type cacheEntry struct {
	msg     *dns.Msg
	stored  time.Time
	expires time.Time
}

// Cache holds upstream answers until their TTL runs out.
type Cache struct {
	clock                  clock.PassiveClock
	maxTTL, maxNegativeTTL time.Duration
	maxEntries             int

	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
}

// NewCache makes a cache; zero limits take the defaults.
func NewCache(clk clock.PassiveClock, maxTTL, maxNegativeTTL time.Duration, maxEntries int) *Cache {
	if maxTTL == 0 {
		maxTTL = DefaultMaxTTL
	}
	if maxNegativeTTL == 0 {
		maxNegativeTTL = DefaultMaxNegativeTTL
	}
	if maxEntries == 0 {
		maxEntries = DefaultCacheEntries
	}
	return &Cache{clock: clk, maxTTL: maxTTL, maxNegativeTTL: maxNegativeTTL, maxEntries: maxEntries, entries: map[cacheKey]cacheEntry{}}
}

func keyOf(q dns.Question, do bool) cacheKey {
	return cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, class: q.Qclass, do: do}
}

// Get returns a copy of the cached answer with its TTLs lowered by its age.
func (c *Cache) Get(q dns.Question, do bool) (*dns.Msg, bool) {
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[keyOf(q, do)]
	if ok && !now.Before(e.expires) {
		delete(c.entries, keyOf(q, do))
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	m := e.msg.Copy()
	age := uint32(now.Sub(e.stored) / time.Second)
	for _, section := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range section {
			if h := rr.Header(); h.Rrtype != dns.TypeOPT {
				h.Ttl = max(h.Ttl, age) - age
			}
		}
	}
	return m, true
}

// Put stores m if CacheTTL allows, evicting expired entries (or, when none has expired, an
// arbitrary one) to stay within the size limit.
func (c *Cache) Put(q dns.Question, do bool, m *dns.Msg) {
	ttl, ok := CacheTTL(m, c.maxTTL, c.maxNegativeTTL)
	if !ok {
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.maxEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.maxEntries {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[keyOf(q, do)] = cacheEntry{msg: m.Copy(), stored: now, expires: now.Add(ttl)}
}

// Len is the number of entries held (expired ones included until evicted).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Forwarder sends questions outside the cluster domain to upstream resolvers, in order, through
// the cache. Identical questions in flight at once share one upstream query.
type Forwarder struct {
	Upstreams []string
	// Timeout per upstream attempt (default 2 s).
	Timeout time.Duration
	Cache   *Cache

	inflight singleflight.Group
}

// ErrNoUpstream is returned when no upstream resolver is configured.
var ErrNoUpstream = errors.New("no upstream resolver")

// Forward answers req's first question from the cache or from the first upstream that answers.
// The reply's ID is req's.
func (f *Forwarder) Forward(ctx context.Context, req *dns.Msg) (*dns.Msg, bool, error) {
	if len(req.Question) == 0 {
		return nil, false, errors.New("forward: no question")
	}
	q := req.Question[0]
	do := false
	if opt := req.IsEdns0(); opt != nil {
		do = opt.Do()
	}
	if f.Cache != nil {
		if m, ok := f.Cache.Get(q, do); ok {
			m.Id = req.Id
			return m, true, nil
		}
	}
	if len(f.Upstreams) == 0 {
		return nil, false, ErrNoUpstream
	}
	k := keyOf(q, do)
	shared, err, _ := f.inflight.Do(fmt.Sprintf("%s/%d/%d/%t", k.name, k.qtype, k.class, k.do), func() (any, error) {
		return f.ask(ctx, q, do, req.CheckingDisabled)
	})
	if err != nil {
		return nil, false, err
	}
	m := shared.(*dns.Msg).Copy()
	m.Id = req.Id
	return m, false, nil
}

// ask queries the upstreams in order and caches the first answer.
func (f *Forwarder) ask(ctx context.Context, q dns.Question, do, checkingDisabled bool) (*dns.Msg, error) {
	up := new(dns.Msg)
	up.Id = dns.Id()
	up.RecursionDesired = true
	up.CheckingDisabled = checkingDisabled
	up.Question = []dns.Question{q}
	up.SetEdns0(upstreamUDPSize, do)
	timeout := f.Timeout
	if timeout == 0 {
		timeout = defaultUpstreamWait
	}
	var errs []error
	for _, addr := range f.Upstreams {
		m, err := exchange(ctx, up, addr, timeout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f.Cache != nil {
			f.Cache.Put(q, do, m)
		}
		return m, nil
	}
	return nil, fmt.Errorf("forward %s %s: %w", q.Name, dns.TypeToString[q.Qtype], errors.Join(errs...))
}

// exchange asks one upstream over UDP, then over TCP when the answer is truncated.
func exchange(ctx context.Context, m *dns.Msg, addr string, timeout time.Duration) (*dns.Msg, error) {
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: timeout, UDPSize: upstreamUDPSize}
		r, _, err := c.ExchangeContext(ctx, m, addr)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", network, addr, err)
		}
		if r.Id != m.Id {
			return nil, fmt.Errorf("%s %s: reply ID mismatch", network, addr)
		}
		if !r.Truncated || network == "tcp" {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%s: unreachable", addr)
}
