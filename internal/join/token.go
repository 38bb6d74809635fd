package join

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/request"
)

// Bootstrap-token names and keys, as Kubernetes and kubeadm spell them.
const (
	// SecretType is the type of a bootstrap token Secret.
	SecretType corev1.SecretType = "bootstrap.kubernetes.io/token"
	// SecretPrefix starts every bootstrap token Secret's name; the token ID follows.
	SecretPrefix = "bootstrap-token-"
	// SecretNamespace holds bootstrap token Secrets.
	SecretNamespace = "kube-system"
	// UserPrefix starts the user name a bootstrap token authenticates as.
	UserPrefix = "system:bootstrap:"
	// BootstrappersGroup holds every user authenticated by a bootstrap token.
	BootstrappersGroup = "system:bootstrappers"
	// DefaultNodeGroup is the extra group skiff's join tokens carry (kubeadm's is
	// system:bootstrappers:kubeadm:default-node-token).
	DefaultNodeGroup = "system:bootstrappers:skiff:default-node-token"

	keyTokenID        = "token-id"
	keyTokenSecret    = "token-secret"
	keyExpiration     = "expiration"
	keyDescription    = "description"
	keyUsageAuth      = "usage-bootstrap-authentication"
	keyUsageSigning   = "usage-bootstrap-signing"
	keyAuthExtraGroup = "auth-extra-groups"

	// joinTokenPrefix starts a printed join token: "K10" then the hex SHA-256 of the CA's
	// SubjectPublicKeyInfo, "::", then the bootstrap token "<id>.<secret>" (the k3s shape).
	joinTokenPrefix = "K10"
)

var (
	tokenRE   = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	idRE      = regexp.MustCompile(`^[a-z0-9]{6}$`)
	groupRE   = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)
	hexHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Token is a bootstrap token: a public ID (the Secret's name) and a secret.
type Token struct {
	ID     string
	Secret string
}

// String is the bearer form "<id>.<secret>".
func (t Token) String() string { return t.ID + "." + t.Secret }

// ParseBearer reads "<id>.<secret>"; ok is false for anything else (other bearer tokens).
func ParseBearer(s string) (Token, bool) {
	m := tokenRE.FindStringSubmatch(s)
	if m == nil {
		return Token{}, false
	}
	return Token{ID: m[1], Secret: m[2]}, true
}

// NewToken draws a random token.
func NewToken() (Token, error) {
	id, err := randomString(6)
	if err != nil {
		return Token{}, err
	}
	secret, err := randomString(16)
	if err != nil {
		return Token{}, err
	}
	return Token{ID: id, Secret: secret}, nil
}

func randomString(n int) (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, n)
	buf := make([]byte, 1)
	for i := 0; i < n; {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("random token: %w", err)
		}
		// 252 is the largest multiple of 36 below 256: rejecting the rest keeps the draw uniform.
		if buf[0] >= 252 {
			continue
		}
		out[i] = alphabet[int(buf[0])%len(alphabet)]
		i++
	}
	return string(out), nil
}

// JoinToken is what `skiff token create` prints: the bootstrap token plus the pin of the CA.
type JoinToken struct {
	// CAHash is the hex SHA-256 of the cluster CA certificate's SubjectPublicKeyInfo.
	CAHash string
	Token  Token
}

// String is "K10<ca hash>::<id>.<secret>".
func (j JoinToken) String() string { return joinTokenPrefix + j.CAHash + "::" + j.Token.String() }

// ParseJoinToken reads a printed join token. A bare "<id>.<secret>" is refused: a node that
// cannot check the CA it talks to must not send its token.
func ParseJoinToken(s string) (JoinToken, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, joinTokenPrefix)
	hash, tok, ok2 := strings.Cut(rest, "::")
	if !ok || !ok2 {
		return JoinToken{}, errors.New(`join token must look like K10<sha256 of the CA public key, hex>::<id>.<secret> (as "skiff token create" prints it)`)
	}
	hash = strings.ToLower(hash)
	if !hexHashRE.MatchString(hash) {
		return JoinToken{}, errors.New("join token: the CA hash is not 64 hex digits")
	}
	t, ok := ParseBearer(tok)
	if !ok {
		return JoinToken{}, errors.New("join token: the bootstrap token is not <6 of [a-z0-9]>.<16 of [a-z0-9]>")
	}
	return JoinToken{CAHash: hash, Token: t}, nil
}

// CAHash is the pin of a CA: the hex SHA-256 of its SubjectPublicKeyInfo (kubeadm's
// discovery-token-ca-cert-hash without the "sha256:" prefix).
func CAHash(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

// SecretOptions describes a new token's Secret.
type SecretOptions struct {
	// TTL is how long the token is good for; 0 means it never expires.
	TTL         time.Duration
	Description string
	// ExtraGroups are the auth-extra-groups (each must start with system:bootstrappers:).
	ExtraGroups []string
}

// NewSecret is the kube-system Secret that stores t, as kubeadm writes it.
func NewSecret(t Token, opts SecretOptions, now time.Time) (*corev1.Secret, error) {
	for _, g := range opts.ExtraGroups {
		if !groupRE.MatchString(g) {
			return nil, fmt.Errorf("extra group %q must start with \"system:bootstrappers:\"", g)
		}
	}
	data := map[string][]byte{
		keyTokenID:      []byte(t.ID),
		keyTokenSecret:  []byte(t.Secret),
		keyUsageAuth:    []byte("true"),
		keyUsageSigning: []byte("true"),
	}
	if opts.TTL > 0 {
		data[keyExpiration] = []byte(now.Add(opts.TTL).UTC().Format(time.RFC3339))
	}
	if opts.Description != "" {
		data[keyDescription] = []byte(opts.Description)
	}
	if len(opts.ExtraGroups) > 0 {
		data[keyAuthExtraGroup] = []byte(strings.Join(opts.ExtraGroups, ","))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretPrefix + t.ID, Namespace: SecretNamespace},
		Type:       SecretType,
		Data:       data,
	}, nil
}

// Info is what `skiff token list` shows of a token Secret (never its secret).
type Info struct {
	ID          string
	Expires     *time.Time
	Usages      []string
	Groups      []string
	Description string
}

// InfoFromSecret reads a token Secret; ok is false for Secrets that are not bootstrap tokens.
func InfoFromSecret(s *corev1.Secret) (Info, bool) {
	if s.Type != SecretType || !strings.HasPrefix(s.Name, SecretPrefix) {
		return Info{}, false
	}
	info := Info{ID: string(s.Data[keyTokenID]), Description: string(s.Data[keyDescription])}
	if info.ID == "" {
		info.ID = strings.TrimPrefix(s.Name, SecretPrefix)
	}
	if exp, ok := s.Data[keyExpiration]; ok {
		if t, err := time.Parse(time.RFC3339, string(exp)); err == nil {
			info.Expires = &t
		}
	}
	for _, u := range []string{"authentication", "signing"} {
		if string(s.Data["usage-bootstrap-"+u]) == "true" {
			info.Usages = append(info.Usages, u)
		}
	}
	if g := string(s.Data[keyAuthExtraGroup]); g != "" {
		info.Groups = strings.Split(g, ",")
	}
	return info, true
}

// Expired reports whether a token Secret's expiration has passed. A Secret whose expiration does
// not parse counts as expired (Kubernetes treats it so).
func Expired(s *corev1.Secret, now time.Time) bool {
	exp, ok := s.Data[keyExpiration]
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, string(exp))
	if err != nil {
		return true
	}
	return !now.Before(t)
}

// Errors of Authenticate, worded for the log (the caller only ever sees 401).
var (
	ErrTokenNotFound = errors.New("bootstrap token not found")
	ErrTokenInvalid  = errors.New("bootstrap token secret does not match")
	ErrTokenExpired  = errors.New("bootstrap token has expired")
	ErrTokenUsage    = errors.New("bootstrap token is not for authentication")
)

// Authenticate checks a presented token against its Secret (nil: none exists) and returns the
// user it authenticates as: system:bootstrap:<id> in system:bootstrappers, its extra groups and
// system:authenticated. The secret is compared in constant time.
func Authenticate(s *corev1.Secret, t Token, now time.Time) (*request.UserInfo, error) {
	if s == nil || s.Type != SecretType || s.Name != SecretPrefix+t.ID || s.DeletionTimestamp != nil {
		return nil, ErrTokenNotFound
	}
	if string(s.Data[keyTokenID]) != t.ID || subtle.ConstantTimeCompare(s.Data[keyTokenSecret], []byte(t.Secret)) != 1 {
		return nil, ErrTokenInvalid
	}
	if Expired(s, now) {
		return nil, ErrTokenExpired
	}
	if string(s.Data[keyUsageAuth]) != "true" {
		return nil, ErrTokenUsage
	}
	groups := []string{BootstrappersGroup}
	if extra := string(s.Data[keyAuthExtraGroup]); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			g = strings.TrimSpace(g)
			if !groupRE.MatchString(g) {
				return nil, fmt.Errorf("bootstrap token %s: extra group %q is not a system:bootstrappers: group", t.ID, g)
			}
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	groups = append(groups, "system:authenticated")
	return &request.UserInfo{Name: UserPrefix + t.ID, Groups: groups}, nil
}

// ValidID reports whether id is a token ID (for `skiff token delete`).
func ValidID(id string) bool { return idRE.MatchString(id) }
