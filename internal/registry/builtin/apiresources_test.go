package builtin

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/apiserver/discovery"
)

// notYetServed names, as "group/version resource", the lines of testdata/api-resources-1.32.txt
// skiff does not serve yet. The test fails when one of them becomes served, so the list can only
// shrink.
var notYetServed = []string{}

// apiResourceLine is one line of the file, in its own column order.
func apiResourceLine(gv string, r metav1.APIResource) string {
	list := func(items []string) string {
		if len(items) == 0 {
			return "-"
		}
		return strings.Join(items, ",")
	}
	verbs := append([]string(nil), r.Verbs...)
	sort.Strings(verbs)
	return strings.Join([]string{r.Name, list(r.ShortNames), gv, strconv.FormatBool(r.Namespaced), r.Kind, list(verbs), list(r.Categories)}, " ")
}

// readAPIResources parses the files (v1.32's list, what v1.33 adds to it, what v1.33 serves with a
// gate skiff turns on, metrics-server's and skiff's own) into normalised
// lines keyed by "group/version resource".
func readAPIResources(t *testing.T) map[string]string {
	t.Helper()
	lines := map[string]string{}
	for _, name := range []string{"api-resources-1.32.txt", "api-resources-1.33-added.txt", "api-resources-1.33-gates-on.txt", "api-resources-metrics-server.txt", "api-resources-skiff.txt"} {
		readAPIResourceFile(t, filepath.Join("testdata", name), lines)
	}
	return lines
}

func readAPIResourceFile(t *testing.T, path string, lines map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 7 {
			t.Fatalf("line %q has %d fields, want 7", text, len(fields))
		}
		key := fields[2] + " " + fields[0]
		if _, dup := lines[key]; dup {
			t.Fatalf("%s listed twice", key)
		}
		lines[key] = strings.Join(fields, " ")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// servedAPIResources asks skiff's discovery, as kubectl does, for every served resource (not the
// subresources) and returns their lines keyed like readAPIResources.
func servedAPIResources(t *testing.T) map[string]string {
	t.Helper()
	disc := discovery.New(Resources(), ExtraSubresources())
	get := func(path string, into any) {
		rec := httptest.NewRecorder()
		disc.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	gvs := []string{"v1"}
	groups := &metav1.APIGroupList{}
	get("/apis", groups)
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			gvs = append(gvs, v.GroupVersion)
		}
	}
	served := map[string]string{}
	for _, gv := range gvs {
		path := "/apis/" + gv
		if gv == "v1" {
			path = "/api/v1"
		}
		list := &metav1.APIResourceList{}
		get(path, list)
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			served[gv+" "+r.Name] = apiResourceLine(gv, r)
		}
	}
	return served
}

// TestAPIResourcesMatchKubernetes keeps `kubectl api-resources` honest: every served resource has
// exactly the names, scope, kind, verbs and categories Kubernetes v1.32 gives it, skiff serves
// nothing Kubernetes does not, and every Kubernetes resource is either served or listed in
// notYetServed.
func TestAPIResourcesMatchKubernetes(t *testing.T) {
	want := readAPIResources(t)
	served := servedAPIResources(t)
	pending := map[string]bool{}
	for _, key := range notYetServed {
		if _, ok := want[key]; !ok {
			t.Errorf("notYetServed names %q, which the v1.32 list does not have", key)
		}
		pending[key] = true
	}
	for key, got := range served {
		line, ok := want[key]
		switch {
		case !ok:
			t.Errorf("skiff serves %q, which a stock v1.32 API server does not", key)
		case pending[key]:
			t.Errorf("%q is served now: remove it from notYetServed", key)
		case got != line:
			t.Errorf("%s differs from Kubernetes v1.32\n got: %s\nwant: %s", key, got, line)
		}
	}
	for key := range want {
		if _, ok := served[key]; !ok && !pending[key] {
			t.Errorf("%q is neither served nor listed in notYetServed", key)
		}
	}
}
