package value

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/secretbox"
)

// Transformer turns stored bytes into plain bytes and back. key is the etcd key the value is
// stored under, authenticated with it.
type Transformer interface {
	// TransformFromStorage returns the plain bytes; stale is true when the value was not written
	// by the transformer's current writer (an older key or provider), so it should be rewritten.
	TransformFromStorage(data []byte, key string) (plain []byte, stale bool, err error)
	TransformToStorage(plain []byte, key string) ([]byte, error)
}

// Identity stores values as they are.
type Identity struct{}

func (Identity) TransformFromStorage(data []byte, _ string) ([]byte, bool, error) {
	return data, false, nil
}

func (Identity) TransformToStorage(plain []byte, _ string) ([]byte, error) { return plain, nil }

// prefixed is one provider's key: values it writes begin with prefix.
type prefixed struct {
	prefix      []byte
	transformer Transformer
}

// Prefixes reads a value with the transformer whose prefix it carries and writes with the first.
// identity, when set, reads values that carry no known prefix (data written before encryption
// was turned on) and, if it comes first (writeIdentity), writes plain values.
type Prefixes struct {
	list          []prefixed
	identity      bool
	writeIdentity bool
}

// TransformFromStorage implements Transformer.
func (p *Prefixes) TransformFromStorage(data []byte, key string) ([]byte, bool, error) {
	for i, t := range p.list {
		if bytes.HasPrefix(data, t.prefix) {
			plain, stale, err := t.transformer.TransformFromStorage(data[len(t.prefix):], key)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", bytes.TrimSuffix(t.prefix, []byte(":")), err)
			}
			return plain, stale || i != 0 || p.writeIdentity, nil
		}
	}
	if bytes.HasPrefix(data, []byte("k8s:enc:")) {
		// Sealed by a provider or key no longer configured: identity must not hand the
		// ciphertext on as if it were the object.
		return nil, false, errors.New("no configured provider or key matches the value's encryption prefix")
	}
	if p.identity {
		return data, !p.writeIdentity, nil
	}
	return nil, false, errors.New("the value is not encrypted and the identity provider is not configured to read it")
}

// TransformToStorage implements Transformer.
func (p *Prefixes) TransformToStorage(plain []byte, key string) ([]byte, error) {
	if p.writeIdentity || len(p.list) == 0 {
		return plain, nil
	}
	first := p.list[0]
	sealed, err := first.transformer.TransformToStorage(plain, key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(first.prefix)+len(sealed))
	return append(append(out, first.prefix...), sealed...), nil
}

// aesGCM seals with AES-GCM and a random 12-byte nonce per value, as Kubernetes' aesgcm provider.
type aesGCM struct{ aead cipher.AEAD }

func newAESGCM(secret []byte) (Transformer, error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return aesGCM{aead: aead}, nil
}

func (t aesGCM) TransformFromStorage(data []byte, key string) ([]byte, bool, error) {
	n := t.aead.NonceSize()
	if len(data) < n {
		return nil, false, errors.New("the stored value is shorter than a nonce")
	}
	plain, err := t.aead.Open(nil, data[:n], data[n:], []byte(key))
	if err != nil {
		return nil, false, fmt.Errorf("decrypt: %w", err)
	}
	return plain, false, nil
}

func (t aesGCM) TransformToStorage(plain []byte, key string) ([]byte, error) {
	n := t.aead.NonceSize()
	out := make([]byte, n, n+len(plain)+t.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return t.aead.Seal(out, out[:n], plain, []byte(key)), nil
}

// aesCBC encrypts with AES-CBC, a random IV and PKCS#7 padding, as Kubernetes' aescbc provider
// (which authenticates nothing: upstream recommends against it, skiff reads and writes it for
// configurations that name it).
type aesCBC struct{ block cipher.Block }

func newAESCBC(secret []byte) (Transformer, error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, err
	}
	return aesCBC{block: block}, nil
}

func (t aesCBC) TransformFromStorage(data []byte, _ string) ([]byte, bool, error) {
	bs := t.block.BlockSize()
	if len(data) < 2*bs || len(data)%bs != 0 {
		return nil, false, errors.New("the stored value is not whole AES blocks after an IV")
	}
	out := make([]byte, len(data)-bs)
	cipher.NewCBCDecrypter(t.block, data[:bs]).CryptBlocks(out, data[bs:])
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || pad > len(out) {
		return nil, false, errors.New("decrypt: invalid padding")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, false, errors.New("decrypt: invalid padding")
		}
	}
	return out[:len(out)-pad], false, nil
}

func (t aesCBC) TransformToStorage(plain []byte, _ string) ([]byte, error) {
	bs := t.block.BlockSize()
	pad := bs - len(plain)%bs
	out := make([]byte, bs+len(plain)+pad)
	if _, err := rand.Read(out[:bs]); err != nil {
		return nil, fmt.Errorf("iv: %w", err)
	}
	copy(out[bs:], plain)
	for i := bs + len(plain); i < len(out); i++ {
		out[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(t.block, out[:bs]).CryptBlocks(out[bs:], out[bs:])
	return out, nil
}

// secretBox seals with NaCl secretbox (XSalsa20-Poly1305) and a random 24-byte nonce, as
// Kubernetes' secretbox provider.
type secretBox struct{ key [32]byte }

func newSecretBox(secret []byte) (Transformer, error) {
	if len(secret) != 32 {
		return nil, fmt.Errorf("a secretbox key is 32 bytes, not %d", len(secret))
	}
	var t secretBox
	copy(t.key[:], secret)
	return t, nil
}

func (t secretBox) TransformFromStorage(data []byte, _ string) ([]byte, bool, error) {
	if len(data) < 24 {
		return nil, false, errors.New("the stored value is shorter than a nonce")
	}
	var nonce [24]byte
	copy(nonce[:], data[:24])
	plain, ok := secretbox.Open(nil, data[24:], &nonce, &t.key)
	if !ok {
		return nil, false, errors.New("decrypt: authentication failed")
	}
	return plain, false, nil
}

func (t secretBox) TransformToStorage(plain []byte, _ string) ([]byte, error) {
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return secretbox.Seal(nonce[:], plain, &nonce, &t.key), nil
}
