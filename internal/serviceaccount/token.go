// Package serviceaccount issues and verifies service account tokens: JWTs signed with the cluster's
// service-account key, with Kubernetes' claims (issuer, subject system:serviceaccount:<ns>:<name>,
// audiences, expiry, and the kubernetes.io claim naming the account and the object the token is bound
// to). It is pure: looking up whether the account or bound object still exists is the caller's job.
package serviceaccount

import (
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// DefaultIssuer is the issuer Kubernetes clusters use by default.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Ref names an object a token belongs to or is bound to.
type Ref struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid,omitempty"`
}

// KubernetesClaim is the "kubernetes.io" private claim.
type KubernetesClaim struct {
	Namespace      string `json:"namespace"`
	ServiceAccount Ref    `json:"serviceaccount"`
	Pod            *Ref   `json:"pod,omitempty"`
	Secret         *Ref   `json:"secret,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
}

type claims struct {
	jwt.RegisteredClaims
	Kubernetes KubernetesClaim `json:"kubernetes.io"`
}

// Request describes a token to issue.
type Request struct {
	Namespace      string
	ServiceAccount Ref
	Audiences      []string
	Expiration     time.Duration
	BoundPod       *Ref
	BoundSecret    *Ref
	BoundNode      *Ref
}

// Issuer signs tokens with the signing key of its source's current key set.
type Issuer struct {
	keys   KeySource
	issuer string
}

// NewIssuer signs with key (ECDSA P-256: ES256) as issuer.
func NewIssuer(key crypto.Signer, issuer string) (*Issuer, error) {
	set, err := NewKeySet(key)
	if err != nil {
		return nil, err
	}
	return NewIssuerFrom(StaticKeys{set}, issuer), nil
}

// NewIssuerFrom signs with the signing key keys has at each Issue, so a rotated key signs from
// the next token on.
func NewIssuerFrom(keys KeySource, issuer string) *Issuer {
	return &Issuer{keys: keys, issuer: issuer}
}

// Name is the issuer ("iss") of the tokens it signs.
func (i *Issuer) Name() string { return i.issuer }

// Issue signs a token for req valid from now.
func (i *Issuer) Issue(req Request, now time.Time) (string, time.Time, error) {
	exp := now.Add(req.Expiration)
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.issuer,
			Subject:   fmt.Sprintf("system:serviceaccount:%s:%s", req.Namespace, req.ServiceAccount.Name),
			Audience:  req.Audiences,
			ExpiresAt: jwt.NewNumericDate(exp),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			// A random ID per token, as Kubernetes' (reported by TokenReview as the credential ID).
			ID: string(uuid.NewUUID()),
		},
		Kubernetes: KubernetesClaim{Namespace: req.Namespace, ServiceAccount: req.ServiceAccount, Pod: req.BoundPod, Secret: req.BoundSecret, Node: req.BoundNode},
	}
	set := i.keys.KeySet()
	t := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	// kid names the key, matching its entry in the JWKS (OIDC discovery), so a verifier holding
	// several keys knows which one to use.
	t.Header["kid"] = set.signKID
	token, err := t.SignedString(set.signer)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign service account token: %w", err)
	}
	return token, exp, nil
}

// Verified is what a valid token says.
type Verified struct {
	Namespace      string
	ServiceAccount Ref
	Audiences      []string
	Claim          KubernetesClaim
	// ID is the token's "jti".
	ID string
}

// Verifier checks tokens against the verifying keys of its source's current key set.
type Verifier struct {
	keys      KeySource
	issuer    string
	audiences []string
}

// NewVerifier accepts tokens from issuer signed by key, for one of audiences (none: any).
func NewVerifier(key crypto.PublicKey, issuer string, audiences []string) *Verifier {
	return &Verifier{keys: staticPublicKey{key}, issuer: issuer, audiences: audiences}
}

// NewVerifierFrom accepts tokens from issuer signed by any verifying key keys has at each Verify
// (the current signing key and the retired ones), for one of audiences (none: any).
func NewVerifierFrom(keys KeySource, issuer string, audiences []string) *Verifier {
	return &Verifier{keys: keys, issuer: issuer, audiences: audiences}
}

// staticPublicKey is the source of a verifier that has one public key and no signing key.
type staticPublicKey struct{ key crypto.PublicKey }

func (s staticPublicKey) KeySet() *KeySet {
	kid, _ := KeyID(s.key)
	return &KeySet{verify: []namedKey{{kid: kid, key: s.key}}}
}

// ErrNotServiceAccountToken means the token is not ours (another authenticator may know it).
var ErrNotServiceAccountToken = errors.New("not a service account token")

// Verify checks signature, issuer, time and audience at now.
func (v *Verifier) Verify(token string, now time.Time) (*Verified, error) {
	if strings.Count(token, ".") != 2 {
		return nil, ErrNotServiceAccountToken
	}
	var c claims
	set := v.keys.KeySet()
	parsed, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return jwt.VerificationKeySet{Keys: toVerificationKeys(set.candidates(kid))}, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(v.issuer), jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithExpirationRequired())
	if err != nil {
		if errors.Is(err, jwt.ErrTokenInvalidIssuer) || errors.Is(err, jwt.ErrTokenMalformed) {
			return nil, ErrNotServiceAccountToken
		}
		return nil, fmt.Errorf("invalid service account token: %w", err)
	}
	if !parsed.Valid {
		return nil, errors.New("invalid service account token")
	}
	if len(v.audiences) > 0 && !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(v.audiences, a) }) {
		return nil, errors.New("invalid service account token: token audiences do not match the API server's")
	}
	prefix := "system:serviceaccount:" + c.Kubernetes.Namespace + ":"
	if !strings.HasPrefix(c.Subject, prefix) || strings.TrimPrefix(c.Subject, prefix) != c.Kubernetes.ServiceAccount.Name {
		return nil, errors.New("invalid service account token: subject does not match its kubernetes.io claim")
	}
	return &Verified{Namespace: c.Kubernetes.Namespace, ServiceAccount: c.Kubernetes.ServiceAccount, Audiences: c.Audience, Claim: c.Kubernetes, ID: c.ID}, nil
}

// Extra is what Kubernetes' service-account authenticator adds to the user of a verified token:
// the credential ID ("JTI=<jti>") and the pod and node the token is bound to.
func (v *Verified) Extra() map[string][]string {
	extra := map[string][]string{}
	if v.ID != "" {
		extra["authentication.kubernetes.io/credential-id"] = []string{"JTI=" + v.ID}
	}
	if p := v.Claim.Pod; p != nil {
		extra["authentication.kubernetes.io/pod-name"] = []string{p.Name}
		extra["authentication.kubernetes.io/pod-uid"] = []string{string(p.UID)}
	}
	if n := v.Claim.Node; n != nil {
		extra["authentication.kubernetes.io/node-name"] = []string{n.Name}
		if n.UID != "" { // a pod's node that was gone when the token was issued has no UID
			extra["authentication.kubernetes.io/node-uid"] = []string{string(n.UID)}
		}
	}
	if len(extra) == 0 {
		return nil
	}
	return extra
}

func toVerificationKeys(keys []crypto.PublicKey) []jwt.VerificationKey {
	out := make([]jwt.VerificationKey, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}
