package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"fmt"
)

// KeySet is the service-account keys of an API server at one moment, as kube-apiserver's
// --service-account-signing-key-file and --service-account-key-file list: one signing key, and
// the public keys that verify tokens (the signing key's own first, then retired ones, kept so the
// tokens they signed stay valid until they expire). Each key is named by its kid.
type KeySet struct {
	signer  *ecdsa.PrivateKey
	signKID string
	verify  []namedKey
}

type namedKey struct {
	kid string
	key crypto.PublicKey
}

// NewKeySet signs with signing (ECDSA P-256: ES256) and verifies with it and every retired key.
// A retired key equal to the signing key, or listed twice, is kept once.
func NewKeySet(signing crypto.Signer, retired ...crypto.PublicKey) (*KeySet, error) {
	ec, ok := signing.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("service account signing key must be ECDSA P-256 (ES256), got %T", signing)
	}
	kid, err := KeyID(ec.Public())
	if err != nil {
		return nil, err
	}
	s := &KeySet{signer: ec, signKID: kid, verify: []namedKey{{kid: kid, key: ec.Public()}}}
	for _, pub := range retired {
		// Every key must be one the JWKS can list and ES256 verifies.
		if ec, ok := pub.(*ecdsa.PublicKey); !ok || ec.Curve != elliptic.P256() {
			return nil, fmt.Errorf("retired service account key must be ECDSA P-256, got %T", pub)
		}
		rkid, err := KeyID(pub)
		if err != nil {
			return nil, err
		}
		if s.lookup(rkid) != nil {
			continue
		}
		s.verify = append(s.verify, namedKey{kid: rkid, key: pub})
	}
	return s, nil
}

// SigningKeyID is the kid of the key new tokens are signed with.
func (s *KeySet) SigningKeyID() string { return s.signKID }

// PublicKeys are every verifying key, the signing key's first: the JWKS.
func (s *KeySet) PublicKeys() []crypto.PublicKey {
	out := make([]crypto.PublicKey, len(s.verify))
	for i, k := range s.verify {
		out[i] = k.key
	}
	return out
}

// KeyIDs are the kids of PublicKeys, in the same order.
func (s *KeySet) KeyIDs() []string {
	out := make([]string, len(s.verify))
	for i, k := range s.verify {
		out[i] = k.kid
	}
	return out
}

func (s *KeySet) lookup(kid string) crypto.PublicKey {
	for _, k := range s.verify {
		if k.kid == kid {
			return k.key
		}
	}
	return nil
}

// candidates are the keys that may have signed a token with header kid: the named key when the
// set has it; every key otherwise (a token from a signer that sets no kid, or another kid
// scheme), as kube-apiserver tries each of its keys.
func (s *KeySet) candidates(kid string) []crypto.PublicKey {
	if k := s.lookup(kid); k != nil {
		return []crypto.PublicKey{k}
	}
	return s.PublicKeys()
}

// KeySource gives the current key set; a holder that reloads files on change is one, a fixed
// set another.
type KeySource interface {
	KeySet() *KeySet
}

// StaticKeys is a KeySource that never changes.
type StaticKeys struct{ Set *KeySet }

// KeySet is the fixed set.
func (s StaticKeys) KeySet() *KeySet { return s.Set }
