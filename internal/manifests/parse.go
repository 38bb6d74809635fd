package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	// FieldManager is the server-side apply field manager of every object applied from the directory.
	FieldManager = "skiff-deploy"
	// FileLabel names the file an object came from (LabelValue of its name); pruning finds a
	// removed file's objects by it.
	FileLabel = "manifests.skiff.sh/file"
	// FileAnnotation is the file's full name (relative to the directory), which a label value
	// cannot always hold.
	FileAnnotation = "manifests.skiff.sh/file"
	// HashAnnotation is the hash of the object as written in its file: an object whose hash
	// matches is not applied again.
	HashAnnotation = "manifests.skiff.sh/hash"
)

// Key is an object's identity, independent of the API version it was written in.
type Key struct {
	Group, Kind, Namespace, Name string
}

func (k Key) String() string {
	gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}.String()
	if k.Namespace == "" {
		return gk + " " + k.Name
	}
	return gk + " " + k.Namespace + "/" + k.Name
}

// Object is one object of a file.
type Object struct {
	File string
	// Index is the object's position in its file (applied in file order within a kind).
	Index int
	// Obj is the object as written, its namespace filled in by the caller for namespaced kinds.
	Obj *unstructured.Unstructured
	// Hash is the hash of the object as written (before the labels this package adds).
	Hash string
}

// Key is the object's identity.
func (o Object) Key() Key {
	gvk := o.Obj.GroupVersionKind()
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.Obj.GetNamespace(), Name: o.Obj.GetName()}
}

// File is one file of the directory: its objects, or why it was refused.
type File struct {
	// Name is the file's path relative to the directory, with forward slashes.
	Name string
	// Hash is the hash of the file's bytes.
	Hash    string
	Objects []Object
	// Err is why the file was refused (it does not parse, an object lacks a kind or a name); a
	// refused file's objects are neither applied nor pruned.
	Err error
}

// IsManifest says whether a file name is one the directory applies: .yaml, .yml or .json, not
// hidden (editors' swap and backup files are) and not marked .skip, as k3s's directory.
func IsManifest(name string) bool {
	base := path.Base(name)
	if strings.HasPrefix(base, ".") || strings.HasSuffix(base, "~") {
		return false
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Parse reads a file's documents (multi-document YAML or JSON; a v1 List is its items). Empty
// documents are skipped; any other fault refuses the whole file, so that half a file is never
// applied and nothing of it is pruned because of a typo.
func Parse(name string, data []byte) File {
	sum := sha256.Sum256(data)
	f := File{Name: name, Hash: hex.EncodeToString(sum[:])}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return f
		}
		if err != nil {
			f.Err = fmt.Errorf("document %d: %w", doc, err)
			f.Objects = nil
			return f
		}
		if len(raw) == 0 {
			continue
		}
		objs, err := objectsOf(raw)
		if err != nil {
			f.Err = fmt.Errorf("document %d: %w", doc, err)
			f.Objects = nil
			return f
		}
		for _, o := range objs {
			f.Objects = append(f.Objects, Object{File: name, Index: len(f.Objects), Obj: o, Hash: objectHash(o)})
		}
	}
}

// objectsOf is a document's objects: itself, or a List's items.
func objectsOf(raw map[string]any) ([]*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: raw}
	if u.IsList() {
		list, err := u.ToList()
		if err != nil {
			return nil, err
		}
		var out []*unstructured.Unstructured
		for i := range list.Items {
			if err := checkObject(&list.Items[i]); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, &list.Items[i])
		}
		return out, nil
	}
	if err := checkObject(u); err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{u}, nil
}

// checkObject refuses what server-side apply cannot take: no apiVersion or kind, or no name
// (apply needs one; generateName would create a new object on every pass).
func checkObject(u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	switch {
	case u.GetAPIVersion() == "" || gvk.Version == "":
		return errors.New("apiVersion is required")
	case gvk.Kind == "":
		return errors.New("kind is required")
	case u.GetName() == "":
		return fmt.Errorf("%s: metadata.name is required", gvk.Kind)
	}
	return nil
}

// objectHash hashes the object's JSON (map keys sorted by encoding/json), so that reformatting
// a file does not count as a change.
func objectHash(u *unstructured.Unstructured) string {
	data, err := json.Marshal(u.Object)
	if err != nil {
		// Decoded YAML always marshals; an impossible object is simply always applied.
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

var labelValueRE = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

// LabelValue is the FileLabel value of a file name: the name itself when it is a valid label
// value, else its valid characters (at most 50) and a hash of the whole name, so that every name
// has one value and two names share none in practice.
func LabelValue(name string) string {
	if len(name) <= 63 && labelValueRE.MatchString(name) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	prefix := strings.Trim(b.String(), "-_.")
	if len(prefix) > 50 {
		prefix = strings.Trim(prefix[:50], "-_.")
	}
	sum := sha256.Sum256([]byte(name))
	if prefix == "" {
		return hex.EncodeToString(sum[:6])
	}
	return prefix + "-" + hex.EncodeToString(sum[:6])
}
