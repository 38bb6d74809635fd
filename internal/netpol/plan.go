package netpol

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skiff-sh/skiff/internal/proxy"
)

// Plan is the `nft -f` script (one atomic transaction) that turns the table from prev into next;
// false when there is nothing to do. A nil prev is a full sync: whatever a previous run left in
// the table is deleted and the table written anew in the same transaction, so a restarted node
// enforces its old rules until the new ones replace them, with no moment of neither.
//
// Otherwise only what changed is written, in an order the kernel accepts: new sets, then new
// chains declared, changed chains flushed and rewritten, set elements deleted and added, map
// elements deleted and added, then the chains no longer wanted (by then unreferenced) flushed and
// deleted, and last the sets no longer wanted.
func Plan(table string, prev *Ruleset, next Ruleset) (string, bool) {
	var b strings.Builder
	t := "ip " + table
	if prev == nil {
		fmt.Fprintf(&b, "add table %s\ndelete table %s\nadd table %s\n", t, t, t)
		for _, c := range []string{CounterDroppedIngress, CounterDroppedEgress} {
			fmt.Fprintf(&b, "add counter %s %s\n", t, c)
		}
		for _, name := range sortedKeys(verdictMaps) {
			fmt.Fprintf(&b, "add map %s %s { %s }\n", t, name, verdictMaps[name])
		}
		prev = &Ruleset{}
	}
	for _, name := range sortedKeys(next.Sets) {
		if _, ok := prev.Sets[name]; !ok {
			fmt.Fprintf(&b, "add set %s %s { %s }\n", t, name, next.Sets[name].Spec)
		}
	}
	added, changed, removed := proxy.DiffChains(prev.Chains, next.Chains)
	for _, name := range added {
		if spec, ok := baseChains[name]; ok {
			fmt.Fprintf(&b, "add chain %s %s { %s }\n", t, name, spec)
		} else {
			fmt.Fprintf(&b, "add chain %s %s\n", t, name)
		}
	}
	for _, name := range sortedKeys(next.Sets) {
		old := prev.Sets[name].Elements
		del, add := diffStrings(old, next.Sets[name].Elements)
		writeElements(&b, "delete", t, name, del, nil)
		writeElements(&b, "add", t, name, add, nil)
	}
	for _, name := range changed {
		fmt.Fprintf(&b, "flush chain %s %s\n", t, name)
	}
	for _, name := range append(added, changed...) {
		for _, r := range next.Chains[name] {
			fmt.Fprintf(&b, "add rule %s %s %s\n", t, name, r)
		}
	}
	for _, name := range sortedKeys(verdictMaps) {
		nw := next.Maps[name]
		del, add := proxy.DiffMapElements(prev.Maps[name], nw)
		writeElements(&b, "delete", t, name, del, nil)
		writeElements(&b, "add", t, name, add, nw)
	}
	for _, name := range removed {
		fmt.Fprintf(&b, "flush chain %s %s\n", t, name)
	}
	for _, name := range removed {
		fmt.Fprintf(&b, "delete chain %s %s\n", t, name)
	}
	for _, name := range sortedKeys(prev.Sets) {
		if _, ok := next.Sets[name]; !ok {
			fmt.Fprintf(&b, "delete set %s %s\n", t, name)
		}
	}
	return b.String(), b.Len() > 0
}

// diffStrings are the elements of old not in next and of next not in old.
func diffStrings(old, next []string) (del, add []string) {
	in := func(s []string) map[string]bool {
		m := make(map[string]bool, len(s))
		for _, e := range s {
			m[e] = true
		}
		return m
	}
	o, n := in(old), in(next)
	for _, e := range old {
		if !n[e] {
			del = append(del, e)
		}
	}
	for _, e := range next {
		if !o[e] {
			add = append(add, e)
		}
	}
	return del, add
}

// writeElements writes one "add element" or "delete element" command for keys (values from
// values for a map being added to; a delete or a set has none). Large changes are cut into
// commands of at most 1,000 elements, far below nft's line limits.
func writeElements(b *strings.Builder, verb, t, name string, keys []string, values map[string]string) {
	for start := 0; start < len(keys); start += 1000 {
		end := min(start+1000, len(keys))
		elems := make([]string, 0, end-start)
		for _, k := range keys[start:end] {
			if v := values[k]; v != "" {
				k += " : " + v
			}
			elems = append(elems, k)
		}
		fmt.Fprintf(b, "%s element %s %s { %s }\n", verb, t, name, strings.Join(elems, ", "))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
