// Package value transforms the bytes stored in etcd: encryption at rest with the providers and the
// configuration file format of Kubernetes' EncryptionConfiguration (apiserver.config.k8s.io/v1):
// aesgcm, aescbc, secretbox and identity, each value prefixed with the provider and key that wrote
// it ("k8s:enc:secretbox:v1:key1:"), the first provider writing and every one reading, so keys can
// be rotated while old values stay readable. The etcd key is authenticated with the value, so a
// ciphertext copied under another key does not decrypt.
//
// It knows nothing of objects, codecs or etcd; the storage layer calls it around its codec.
package value
