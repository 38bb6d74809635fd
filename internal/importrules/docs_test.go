package importrules

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is where go.mod, README.md and docs/ are, seen from this package's directory (go test
// runs a package's tests in its own directory).
const repoRoot = "../.."

// mdLink is one inline link or image of a markdown file: its target as written and the line it is on.
type mdLink struct {
	target string
	line   int
}

var (
	// linkRE matches an inline link or image, [text](target) or ![alt](target "title"), after code
	// spans are blanked; nested brackets in the text are not used in skiff's docs.
	linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpanRE matches an inline code span, whose brackets are text, not links.
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	// layoutRowRE matches a row of the Layout page's package table and captures the package path.
	layoutRowRE = regexp.MustCompile("^\\| \\[`([^`]+)`\\]")
)

// markdownLines yields the lines of a markdown text that are prose (not in a fenced or indented
// code block), with their 1-based line numbers. An indented block starts only after a blank line,
// as in CommonMark: an indented line right after prose continues that paragraph or list item.
func markdownLines(text string) []mdLine {
	var out []mdLine
	fenced, indented := false, false
	prevBlank := true
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fenced = !fenced
		case fenced:
		case (strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")) && (prevBlank || indented):
			indented = true
		default:
			if trimmed != "" {
				indented = false
			}
			out = append(out, mdLine{text: l, number: i + 1})
		}
		prevBlank = trimmed == ""
	}
	return out
}

type mdLine struct {
	text   string
	number int
}

// markdownLinks returns the inline links and images of a markdown text, leaving out code.
func markdownLinks(text string) []mdLink {
	var out []mdLink
	for _, l := range markdownLines(text) {
		prose := codeSpanRE.ReplaceAllStringFunc(l.text, func(s string) string { return strings.Repeat("x", len(s)) })
		for _, m := range linkRE.FindAllStringSubmatch(prose, -1) {
			out = append(out, mdLink{target: m[1], line: l.number})
		}
	}
	return out
}

// headingAnchor is GitHub's anchor for a heading's text: lower case, punctuation dropped (hyphens
// and underscores kept), spaces turned into hyphens. Links in the text count by their text.
func headingAnchor(heading string) string {
	heading = linkRE.ReplaceAllStringFunc(heading, func(s string) string {
		return s[strings.Index(s, "[")+1 : strings.Index(s, "]")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdownAnchors returns the anchors of a markdown text's ATX headings, a repeated one numbered
// -1, -2, ... as GitHub does.
func markdownAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range markdownLines(text) {
		if !strings.HasPrefix(l.text, "#") {
			continue
		}
		a := headingAnchor(strings.TrimLeft(l.text, "#"))
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// checkLink says what is wrong with a link of the file at from (a slash path relative to the
// repository), or "" when it resolves: the file or directory it names exists and, when it names an
// anchor, the markdown file has a heading with that anchor. Links off the repository (a scheme) are
// not checked: the test must not reach the network.
func checkLink(from, target string, exists func(string) bool, anchorsOf func(string) (map[string]bool, error)) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	to := from
	if file != "" {
		to = path.Clean(path.Join(path.Dir(from), file))
		if to == ".." || strings.HasPrefix(to, "../") {
			return fmt.Sprintf("%s leaves the repository", target)
		}
		if !exists(to) {
			return fmt.Sprintf("%s: %s does not exist", target, to)
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(to, ".md") {
		return fmt.Sprintf("%s: an anchor into %s, which is not markdown", target, to)
	}
	anchors, err := anchorsOf(to)
	if err != nil {
		return fmt.Sprintf("%s: %v", target, err)
	}
	if !anchors[anchor] {
		return fmt.Sprintf("%s: %s has no heading #%s", target, to, anchor)
	}
	return ""
}

func TestMarkdownLinks(t *testing.T) {
	text := strings.Join([]string{
		"# Title",
		"See [a](a.md) and ![img](b.png) and [c](c.md#x \"title\").",
		"Not `[code](x.md)` but [d](d.md).",
		"",
		"    [in an indented block](nope.md)",
		"",
		"```",
		"[in a fence](nope.md)",
		"```",
		"- a list item whose continuation",
		"    [is prose](e.md)",
	}, "\n")
	var got []string
	for _, l := range markdownLinks(text) {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := []string{"2:a.md", "2:b.png", "2:c.md#x", "3:d.md", "11:e.md"}
	if !slices.Equal(got, want) {
		t.Errorf("markdownLinks = %v, want %v", got, want)
	}
}

func TestHeadingAnchors(t *testing.T) {
	cases := []struct{ heading, want string }{
		{" The API server", "the-api-server"},
		{" `skiff server` flags", "skiff-server-flags"},
		{" Why protobuf in etcd (measured)", "why-protobuf-in-etcd-measured"},
		{" Volumes: the default StorageClass", "volumes-the-default-storageclass"},
		{" Beyond conformance (the kind CI selection)", "beyond-conformance-the-kind-ci-selection"},
		{" See [the overview](overview.md) first", "see-the-overview-first"},
		{" node-local API_balancer", "node-local-api_balancer"},
	}
	for _, c := range cases {
		if got := headingAnchor(c.heading); got != c.want {
			t.Errorf("headingAnchor(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	got := markdownAnchors("# A\n## A\n### A\n    # not a heading\n```\n# nor this\n```\n## B")
	want := map[string]bool{"a": true, "a-1": true, "a-2": true, "b": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("markdownAnchors = %v, want %v", got, want)
	}
}

func TestCheckLink(t *testing.T) {
	files := map[string]string{
		"README.md":            "# skiff\n## Status\n",
		"docs/user/install.md": "# Install\n## Using it\n",
		"docs/dashboard/a.png": "",
		"internal/kubelet":     "",
	}
	exists := func(p string) bool { _, ok := files[p]; return ok }
	anchorsOf := func(p string) (map[string]bool, error) { return markdownAnchors(files[p]), nil }
	cases := []struct{ from, target, wantErr string }{
		{"README.md", "docs/user/install.md", ""},
		{"README.md", "docs/user/install.md#using-it", ""},
		{"README.md", "#status", ""},
		{"README.md", "#missing", "README.md has no heading #missing"},
		{"README.md", "docs/user/gone.md", "docs/user/gone.md does not exist"},
		{"docs/user/install.md", "../dashboard/a.png", ""},
		{"docs/user/install.md", "../../internal/kubelet", ""},
		{"docs/user/install.md", "../../README.md#status", ""},
		{"docs/user/install.md", "../../README.md#using-it", "README.md has no heading #using-it"},
		{"docs/user/install.md", "../../internal/kubelet#x", "not markdown"},
		{"docs/user/install.md", "../../../etc/passwd", "leaves the repository"},
		{"README.md", "https://kubernetes.io/docs/", ""},
	}
	for _, c := range cases {
		got := checkLink(c.from, c.target, exists, anchorsOf)
		if (c.wantErr == "") != (got == "") || !strings.Contains(got, c.wantErr) {
			t.Errorf("checkLink(%q, %q) = %q, want an error containing %q", c.from, c.target, got, c.wantErr)
		}
	}
}

// docsFiles lists README.md and every markdown file under docs/, as slash paths relative to the
// repository.
func docsFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking docs/: %v", err)
	}
	return files
}

// TestDocsLinks checks every relative link of README.md and docs/: the file or directory exists and
// the heading an anchor names is there. A page moved or a heading renamed fails here, not in a reader's
// browser.
func TestDocsLinks(t *testing.T) {
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p)))
		return err == nil
	}
	cache := map[string]map[string]bool{}
	anchorsOf := func(p string) (map[string]bool, error) {
		if a, ok := cache[p]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		cache[p] = markdownAnchors(string(b))
		return cache[p], nil
	}
	links := 0
	for _, f := range docsFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		for _, l := range markdownLinks(string(b)) {
			links++
			if msg := checkLink(f, l.target, exists, anchorsOf); msg != "" {
				t.Errorf("%s:%d: %s", f, l.line, msg)
			}
		}
	}
	if links == 0 {
		t.Fatal("no links found in README.md and docs/: the parser or the walk is broken")
	}
	t.Logf("%d links checked", links)
}

// TestLayoutNamesEveryPackage checks that docs/design/layout.md has a row for every package of the
// module and none for a package that is gone, so a new package is described where newcomers look.
func TestLayoutNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "design", "layout.md"))
	if err != nil {
		t.Fatalf("reading the Layout page: %v", err)
	}
	var named []string
	for _, l := range strings.Split(string(b), "\n") {
		if m := layoutRowRE.FindStringSubmatch(l); m != nil {
			named = append(named, m[1])
		}
	}
	var pkgs []string
	for _, p := range goList(t, "./...") {
		pkgs = append(pkgs, strings.TrimPrefix(p, module))
	}
	missing, stale := diffSorted(pkgs, named)
	for _, p := range missing {
		t.Errorf("package %s has no row in docs/design/layout.md: add one line saying what it is", p)
	}
	for _, p := range stale {
		t.Errorf("docs/design/layout.md names %s, which is not a package of the module", p)
	}
}

// diffSorted returns what is in want but not in have, and what is in have but not in want.
func diffSorted(want, have []string) (missing, extra []string) {
	w, h := map[string]bool{}, map[string]bool{}
	for _, p := range want {
		w[p] = true
	}
	for _, p := range have {
		h[p] = true
	}
	for _, p := range want {
		if !h[p] {
			missing = append(missing, p)
		}
	}
	for _, p := range have {
		if !w[p] {
			extra = append(extra, p)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

// frontDoorLines is how long README.md may grow: it says what skiff is, how to start it, its
// topologies and status, and where to read on; everything else has a page under docs/.
const frontDoorLines = 300

// designPageParts are what every component page under docs/design/ opens with, so a reader learns
// what a component owns, how data moves through it, what must stay true and where it is tested
// before the details.
var designPageParts = []string{"## At a glance", "- **Owns**:", "- **Data flow**:", "- **Invariants**:", "- **Tests**:"}

// designPagesWithoutGlance are the design pages that are maps, not components.
var designPagesWithoutGlance = []string{"overview.md", "layout.md", "tests.md"}

// missingParts returns the parts of designPageParts a page's text lacks, in order, checking that
// they come before the page's first heading other than its title and "At a glance".
func missingParts(text string) []string {
	var missing []string
	head := text
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if i > 0 && strings.HasPrefix(l, "#") && strings.TrimSpace(l) != "## At a glance" {
			head = strings.Join(lines[:i], "\n")
			break
		}
	}
	for _, p := range designPageParts {
		if !strings.Contains(head, "\n"+p) {
			missing = append(missing, p)
		}
	}
	return missing
}

func TestMissingParts(t *testing.T) {
	whole := "# X\n\n## At a glance\n\n- **Owns**: a\n- **Data flow**: b\n- **Invariants**: c\n- **Tests**: d\n\n## X\ntext\n"
	if got := missingParts(whole); len(got) != 0 {
		t.Errorf("missingParts(whole page) = %v, want none", got)
	}
	late := "# X\n\n## At a glance\n\n- **Owns**: a\n\n## X\n- **Data flow**: b\n- **Invariants**: c\n- **Tests**: d\n"
	want := []string{"- **Data flow**:", "- **Invariants**:", "- **Tests**:"}
	if got := missingParts(late); !slices.Equal(got, want) {
		t.Errorf("missingParts(parts after the first section) = %v, want %v", got, want)
	}
	if got := missingParts("# X\n\ntext\n"); !slices.Equal(got, designPageParts) {
		t.Errorf("missingParts(no glance) = %v, want all of them", got)
	}
}

// TestDocsShape keeps the shape issue 27 gave the docs: README.md is a front door, and every
// component page under docs/design/ opens with what it owns, its data flow, invariants and tests.
func TestDocsShape(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatalf("reading README.md: %v", err)
	}
	if n := strings.Count(string(readme), "\n"); n > frontDoorLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/ and link it", n, frontDoorLines)
	}
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "design", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no design pages under docs/design (%v)", err)
	}
	for _, p := range pages {
		if slices.Contains(designPagesWithoutGlance, filepath.Base(p)) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		if missing := missingParts(string(b)); len(missing) > 0 {
			t.Errorf("%s does not open with %s", filepath.Base(p), strings.Join(missing, ", "))
		}
	}
}

// repoPathRE matches a path of this repository written as code in the docs (under internal/, cmd/,
// test/, hack/ or docs/), such as `internal/kubelet/podactions.go` or `test/e2e/multinode_test.go`.
var repoPathRE = regexp.MustCompile("`((?:internal|cmd|test|hack|docs)/[A-Za-z0-9_./*-]+?)/?`")

// notRepoPaths are code-formatted paths the docs name in other repositories (upstream's
// test/images, which the conformance harness builds its images from).
var notRepoPaths = []string{"test/images"}

// repoPaths returns the repository paths a markdown text names as code, with the line of each; a
// glob such as `test/bench/*.md` names its directory.
func repoPaths(text string) []mdLink {
	var out []mdLink
	for i, l := range strings.Split(text, "\n") {
		for _, m := range repoPathRE.FindAllStringSubmatch(l, -1) {
			p, _, _ := strings.Cut(m[1], "*")
			p = strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".")
			if !slices.Contains(notRepoPaths, p) {
				out = append(out, mdLink{target: p, line: i + 1})
			}
		}
	}
	return out
}

func TestRepoPaths(t *testing.T) {
	text := "see `internal/kubelet/podactions.go` and `test/bench/*.md`,\n`internal/apiserver/`, `test/images` and `pkg/kubelet` (upstream's); not internal/x"
	var got []string
	for _, p := range repoPaths(text) {
		got = append(got, fmt.Sprintf("%d:%s", p.line, p.target))
	}
	want := []string{"1:internal/kubelet/podactions.go", "1:test/bench", "2:internal/apiserver"}
	if !slices.Equal(got, want) {
		t.Errorf("repoPaths = %v, want %v", got, want)
	}
}

// TestDocsPathsExist checks that every file or package the docs name as code still exists, so a
// file moved in a refactor takes its mentions with it.
func TestDocsPathsExist(t *testing.T) {
	n := 0
	for _, f := range docsFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		for _, p := range repoPaths(string(b)) {
			n++
			if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p.target))); err != nil {
				t.Errorf("%s:%d names %s, which does not exist", f, p.line, p.target)
			}
		}
	}
	t.Logf("%d paths checked", n)
}
