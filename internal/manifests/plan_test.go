package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
`

const crontab = `apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: daily, namespace: default}
`

func cm(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: default}\ndata: {v: \"" + value + "\"}\n"
}

const ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n"

// deployedFrom is the cluster after a file's objects were applied.
func deployedFrom(f File) []Deployed {
	var out []Deployed
	for _, o := range f.Objects {
		out = append(out, Deployed{Key: o.Key(), GVK: o.Obj.GroupVersionKind(), FileLabel: LabelValue(f.Name), File: f.Name, Hash: o.Hash})
	}
	return out
}

func keysOf(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.File+":"+o.Key().String())
	}
	return out
}

func prunedKeys(ds []Deployed) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Key.String())
	}
	return out
}

func TestDecide(t *testing.T) {
	a := Parse("a.yaml", []byte(cm("one", "1")+"---\n"+cm("two", "2")))
	aChanged := Parse("a.yaml", []byte(cm("one", "1")+"---\n"+cm("two", "changed")))
	aShrunk := Parse("a.yaml", []byte(cm("one", "1")))
	aBroken := Parse("a.yaml", []byte("kind: [unclosed\n"))
	b := Parse("b.yaml", []byte(cm("two", "2")))
	crds := Parse("z-crd.yaml", []byte(crd))
	crs := Parse("a-cr.yaml", []byte(crontab+"---\n"+ns))
	hooks := Parse("0-hooks.yaml", []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\n"))
	otherFile := deployedFrom(a)
	otherFile[0].FileLabel = "elsewhere.yaml"

	tests := []struct {
		name      string
		files     []File
		deployed  []Deployed
		apply     []string
		prune     []string
		refused   []string
		refuseMsg string
	}{
		{name: "new file is applied", files: []File{a},
			apply: []string{"a.yaml:ConfigMap default/one", "a.yaml:ConfigMap default/two"}},
		{name: "unchanged file costs nothing", files: []File{a}, deployed: deployedFrom(a)},
		{name: "changed object alone is applied again", files: []File{aChanged}, deployed: deployedFrom(a),
			apply: []string{"a.yaml:ConfigMap default/two"}},
		{name: "deleted object comes back", files: []File{a}, deployed: deployedFrom(a)[:1],
			apply: []string{"a.yaml:ConfigMap default/two"}},
		{name: "object labelled by another file is taken over", files: []File{a}, deployed: otherFile,
			apply: []string{"a.yaml:ConfigMap default/one"}},
		{name: "object dropped from its file is pruned", files: []File{aShrunk}, deployed: deployedFrom(a),
			prune: []string{"ConfigMap default/two"}},
		{name: "removed file's objects are pruned", files: nil, deployed: deployedFrom(a),
			prune: []string{"ConfigMap default/one", "ConfigMap default/two"}},
		{name: "broken file keeps its objects", files: []File{aBroken}, deployed: deployedFrom(a),
			refused: []string{"a.yaml"}, refuseMsg: "document 1"},
		{name: "object moved to another file is relabelled, not pruned", files: []File{aShrunk, b}, deployed: deployedFrom(a),
			apply: []string{"b.yaml:ConfigMap default/two"}},
		{name: "object in two files refuses the later file", files: []File{b, a},
			apply: []string{"a.yaml:ConfigMap default/one", "a.yaml:ConfigMap default/two"}, refused: []string{"b.yaml"}, refuseMsg: "ConfigMap default/two is also in a.yaml"},
		{name: "definitions and namespaces first, webhooks last, whatever the file", files: []File{hooks, crs, crds},
			apply: []string{"z-crd.yaml:CustomResourceDefinition.apiextensions.k8s.io crontabs.stable.example.com", "a-cr.yaml:Namespace team",
				"a-cr.yaml:CronTab.stable.example.com default/daily", "0-hooks.yaml:ValidatingWebhookConfiguration.admissionregistration.k8s.io v"}},
		{name: "prune goes in reverse kind order", deployed: append(deployedFrom(crds), deployedFrom(crs)...),
			prune: []string{"CronTab.stable.example.com default/daily", "Namespace team", "CustomResourceDefinition.apiextensions.k8s.io crontabs.stable.example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Decide(tt.files, tt.deployed)
			if got := strings.Join(keysOf(p.Apply), "\n"); got != strings.Join(tt.apply, "\n") {
				t.Errorf("apply:\n%s\nwant:\n%s", got, strings.Join(tt.apply, "\n"))
			}
			if got := strings.Join(prunedKeys(p.Prune), "\n"); got != strings.Join(tt.prune, "\n") {
				t.Errorf("prune:\n%s\nwant:\n%s", got, strings.Join(tt.prune, "\n"))
			}
			if len(p.Refused) != len(tt.refused) {
				t.Fatalf("refused %v, want %v", p.Refused, tt.refused)
			}
			for _, name := range tt.refused {
				if err := p.Refused[name]; err == nil || !strings.Contains(err.Error(), tt.refuseMsg) {
					t.Errorf("refused[%s] = %v, want %q", name, err, tt.refuseMsg)
				}
			}
		})
	}
}

func TestKindRank(t *testing.T) {
	crd := schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	hook := schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}
	if !(kindRank(crd) < kindRank(deploy) && kindRank(deploy) < kindRank(hook)) {
		t.Fatalf("ranks crd %d deployment %d webhook %d", kindRank(crd), kindRank(deploy), kindRank(hook))
	}
}
