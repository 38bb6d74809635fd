package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, data string
		keys       []string
		err        string
	}{
		{name: "multi-document YAML, empty documents skipped", data: "---\n" + cm("one", "1") + "---\n# only a comment\n---\n" + cm("two", "2"),
			keys: []string{"ConfigMap default/one", "ConfigMap default/two"}},
		{name: "JSON", data: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`, keys: []string{"Namespace team"}},
		{name: "a List is its items", data: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n",
			keys: []string{"Namespace a", "Namespace b"}},
		{name: "empty file", data: ""},
		{name: "YAML that does not parse", data: cm("one", "1") + "---\nkind: [unclosed\n", err: "document 2"},
		{name: "no kind", data: "apiVersion: v1\nmetadata: {name: x}\n", err: "kind is required"},
		{name: "no apiVersion", data: "kind: ConfigMap\nmetadata: {name: x}\n", err: "apiVersion is required"},
		{name: "no name", data: "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n", err: "metadata.name is required"},
		{name: "a List item without a name", data: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace}\n", err: "item 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Parse("f.yaml", []byte(tt.data))
			if tt.err != "" {
				if f.Err == nil || !strings.Contains(f.Err.Error(), tt.err) || len(f.Objects) != 0 {
					t.Fatalf("err %v, objects %d; want %q and none", f.Err, len(f.Objects), tt.err)
				}
				return
			}
			if f.Err != nil {
				t.Fatal(f.Err)
			}
			var keys []string
			for i, o := range f.Objects {
				keys = append(keys, o.Key().String())
				if o.Index != i || o.File != "f.yaml" || o.Hash == "" {
					t.Errorf("object %d: index %d file %q hash %q", i, o.Index, o.File, o.Hash)
				}
			}
			if strings.Join(keys, ",") != strings.Join(tt.keys, ",") {
				t.Fatalf("keys %v, want %v", keys, tt.keys)
			}
		})
	}
}

func TestObjectHashIgnoresFormatting(t *testing.T) {
	a := Parse("a.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: \"1\", b: \"2\"}\n"))
	b := Parse("b.yaml", []byte("# reformatted\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  b: \"2\"\n  a: \"1\"\n"))
	c := Parse("c.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: \"1\", b: \"3\"}\n"))
	if a.Objects[0].Hash != b.Objects[0].Hash {
		t.Error("reformatting changed the hash")
	}
	if a.Objects[0].Hash == c.Objects[0].Hash {
		t.Error("a changed value kept the hash")
	}
	if a.Hash == b.Hash {
		t.Error("the file hash should follow the bytes")
	}
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("x", 70) + ".yaml"
	tests := []struct{ name, want string }{
		{"dns.yaml", "dns.yaml"},
		{"addons/dns.yaml", "addons_dns.yaml-"},
		{"-odd.yaml", "odd.yaml-"},
		{long, strings.Repeat("x", 50) + "-"},
		{"ä.yaml", "yaml-"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := LabelValue(tt.name)
		if !strings.HasPrefix(got, tt.want) || len(got) > 63 || !labelValueRE.MatchString(got) {
			t.Errorf("LabelValue(%q) = %q, want a valid label value starting %q", tt.name, got, tt.want)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q share %q", tt.name, other, got)
		}
		seen[got] = tt.name
	}
	if LabelValue("a/b.yaml") == LabelValue("a_b.yaml") {
		t.Error("a/b.yaml and a_b.yaml share a label value")
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", cm("one", "1"))
	write("sub/b.json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`)
	write("bad.yml", "kind: [unclosed\n")
	write("notes.txt", "not a manifest")
	write(".a.yaml.swp", "editor state")
	write("a.yaml~", "backup")
	write(".git/x.yaml", cm("hidden", "1"))
	files, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		state := "ok"
		if f.Err != nil {
			state = "refused"
		}
		got = append(got, f.Name+"="+state)
	}
	if want := "a.yaml=ok,bad.yml=refused,sub/b.json=ok"; strings.Join(got, ",") != want {
		t.Fatalf("files %v, want %s", got, want)
	}
	if _, err := ReadDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory must be an error (reading it as empty would prune everything)")
	}
}
