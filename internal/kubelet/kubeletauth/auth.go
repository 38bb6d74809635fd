package kubeletauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// User is an authenticated caller of the kubelet API.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Config configures Auth. The TTLs default to the kubelet's own defaults for its webhook caches
// (--authentication-token-webhook-cache-ttl 2m, --authorization-webhook-cache-authorized-ttl 5m,
// -unauthorized-ttl 30s).
type Config struct {
	// Client sends the TokenReviews and SubjectAccessReviews (the kubelet's own identity, which
	// the system:node role lets create both).
	Client   kubernetes.Interface
	NodeName string
	Clock    clock.PassiveClock
	Log      *slog.Logger

	TokenTTL, AllowedTTL, DeniedTTL time.Duration
}

// Auth decides who calls the kubelet API and whether they may.
type Auth struct {
	cfg    Config
	tokens *ttlCache[tokenResult]
	access *ttlCache[bool]
}

type tokenResult struct {
	user *User
	ok   bool
}

// maxCached bounds each cache.
const maxCached = 4096

// New builds an Auth.
func New(cfg Config) (*Auth, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("kubelet auth: a client and a node name are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Log == nil {
		return nil, errors.New("kubelet auth: a logger is required")
	}
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = 2 * time.Minute
	}
	if cfg.AllowedTTL == 0 {
		cfg.AllowedTTL = 5 * time.Minute
	}
	if cfg.DeniedTTL == 0 {
		cfg.DeniedTTL = 30 * time.Second
	}
	return &Auth{cfg: cfg, tokens: newTTLCache[tokenResult](cfg.Clock, maxCached), access: newTTLCache[bool](cfg.Clock, maxCached)}, nil
}

// Authenticate identifies the caller: a verified client certificate first, then a bearer token
// through a TokenReview. ok is false when the request carries neither (the kubelet refuses
// anonymous callers, as with --anonymous-auth=false); err is set when the credentials are bad
// or could not be checked.
func (a *Auth) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		cert := r.TLS.PeerCertificates[0]
		if cert.Subject.CommonName == "" {
			return nil, false, errors.New("client certificate has an empty common name")
		}
		return &User{Name: cert.Subject.CommonName, Groups: append(slices.Clone(cert.Subject.Organization), "system:authenticated")}, true, nil
	}
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	if auth == "" {
		return nil, false, nil
	}
	scheme, token, found := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "bearer") || token == "" {
		return nil, false, errors.New("invalid bearer token")
	}
	return a.reviewToken(r.Context(), token)
}

func (a *Auth) reviewToken(ctx context.Context, token string) (*User, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if res, ok := a.tokens.get(key); ok {
		return res.user, res.ok, nil
	}
	review, err := a.cfg.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		// Not cached: the API server may answer the next time.
		return nil, false, fmt.Errorf("token review: %w", err)
	}
	res := tokenResult{}
	if review.Status.Authenticated {
		u := review.Status.User
		extra := map[string][]string{}
		for k, v := range u.Extra {
			extra[k] = v
		}
		res = tokenResult{ok: true, user: &User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}}
	}
	a.tokens.put(key, res, a.cfg.TokenTTL)
	if !res.ok {
		return nil, false, errors.New("invalid bearer token")
	}
	return res.user, true, nil
}

// Authorize asks the API server, through SubjectAccessReviews, whether user may do attrs on
// the node; any one allowed subresource allows the request.
func (a *Auth) Authorize(ctx context.Context, user *User, attrs Attributes) (bool, error) {
	var errs []error
	for _, sub := range attrs.Subresources {
		ok, err := a.review(ctx, user, attrs, sub)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, errors.Join(errs...)
}

func (a *Auth) review(ctx context.Context, user *User, attrs Attributes, subresource string) (bool, error) {
	key := accessKey(user, attrs.Verb, attrs.NodeName, subresource)
	if allowed, ok := a.access.get(key); ok {
		return allowed, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = v
	}
	sar, err := a.cfg.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Name, UID: user.UID, Groups: user.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: attrs.Verb, Group: "", Version: "v1", Resource: "nodes", Subresource: subresource, Name: attrs.NodeName,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	allowed := sar.Status.Allowed && !sar.Status.Denied
	ttl := a.cfg.DeniedTTL
	if allowed {
		ttl = a.cfg.AllowedTTL
	}
	a.access.put(key, allowed, ttl)
	return allowed, nil
}

// accessKey identifies one decision: who (name, uid, groups, extra) does what.
func accessKey(u *User, verb, node, subresource string) string {
	var b strings.Builder
	for _, s := range []string{u.Name, u.UID, strings.Join(u.Groups, "\x01"), verb, node, subresource} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + "=" + strings.Join(u.Extra[k], "\x01"))
		b.WriteByte(0)
	}
	return b.String()
}

// Wrap serves next only to authenticated, authorized callers: 401 Unauthorized without valid
// credentials, 403 in the kubelet's words otherwise ("Forbidden (user=..., verb=get,
// resource=nodes, subresource(s)=[pods proxy])").
func (a *Auth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := a.Authenticate(r)
		if err != nil || !ok {
			if err != nil {
				a.cfg.Log.Debug("kubelet API request not authenticated", "path", r.URL.Path, "err", err)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := AttributesFor(r.Method, r.URL.Path, a.cfg.NodeName)
		allowed, err := a.Authorize(r.Context(), user, attrs)
		if err != nil && !allowed {
			a.cfg.Log.Error("kubelet API authorization failed", "user", user.Name, "path", r.URL.Path, "err", err)
			http.Error(w, "Authorization error (user="+user.Name+", verb="+attrs.Verb+", resource=nodes, subresource(s)="+fmt.Sprint(attrs.Subresources)+")", http.StatusInternalServerError)
			return
		}
		if !allowed {
			a.cfg.Log.Info("kubelet API request forbidden", "user", user.Name, "verb", attrs.Verb, "subresources", attrs.Subresources, "path", r.URL.Path)
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", user.Name, attrs.Verb, attrs.Subresources), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
