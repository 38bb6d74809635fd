package proxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PlanNft is the `nft -f` script (one atomic transaction) that turns the node's table from prev
// into next. A nil prev is a full sync: the table (whatever a previous run left in it) is deleted
// and written anew in the same transaction. Otherwise only what changed is written, in an order
// the kernel accepts: new affinity sets and chains are declared, changed chains flushed and
// rewritten, map elements deleted and added, then chains no longer wanted (now unreferenced) are
// flushed and deleted, and last the sets no longer wanted. The second result is false when there
// is nothing to do.
func PlanNft(table string, prev *NftRuleset, next NftRuleset) (string, bool) {
	var b strings.Builder
	t := "ip " + table
	if prev == nil {
		// "add" first, so the delete succeeds when there is no table yet.
		fmt.Fprintf(&b, "add table %s\ndelete table %s\nadd table %s\n", t, t, t)
		for _, name := range sortedKeys(nftMaps) {
			kind := "map"
			if nftIsSet(name) {
				kind = "set"
			}
			fmt.Fprintf(&b, "add %s %s %s { %s }\n", kind, t, name, nftMaps[name])
		}
		for _, name := range sortedKeys(next.Sets) {
			fmt.Fprintf(&b, "add set %s %s { %s }\n", t, name, next.Sets[name])
		}
		chains := sortedKeys(next.Chains)
		for _, name := range chains {
			writeChainDecl(&b, t, name)
		}
		for _, name := range chains {
			writeRules(&b, t, name, next.Chains[name])
		}
		for _, name := range sortedKeys(next.Maps) {
			writeElements(&b, "add", t, name, sortedKeys(next.Maps[name]), next.Maps[name])
		}
		return b.String(), true
	}

	for _, name := range sortedKeys(next.Sets) {
		if _, ok := prev.Sets[name]; !ok {
			fmt.Fprintf(&b, "add set %s %s { %s }\n", t, name, next.Sets[name])
		}
	}
	added, changed, removed := DiffChains(prev.Chains, next.Chains)
	for _, name := range added {
		writeChainDecl(&b, t, name)
	}
	for _, name := range changed {
		fmt.Fprintf(&b, "flush chain %s %s\n", t, name)
	}
	for _, name := range append(added, changed...) {
		writeRules(&b, t, name, next.Chains[name])
	}
	for _, name := range sortedKeys(next.Maps) {
		nw := next.Maps[name]
		del, add := DiffMapElements(prev.Maps[name], nw)
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

// DiffChains compares two tables' chains (name -> rules in order): the chains only next has, those
// whose rules differ, and those only prev has, each sorted. The policy agent plans with it too.
func DiffChains(prev, next map[string][]string) (added, changed, removed []string) {
	for _, name := range sortedKeys(next) {
		old, ok := prev[name]
		switch {
		case !ok:
			added = append(added, name)
		case !slices.Equal(old, next[name]):
			changed = append(changed, name)
		}
	}
	for _, name := range sortedKeys(prev) {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	return added, changed, removed
}

// DiffMapElements compares a map's elements (key -> value): the keys to delete (gone, or whose
// value changed) and to add (new, or whose value changed), each sorted.
func DiffMapElements(old, next map[string]string) (del, add []string) {
	for _, k := range sortedKeys(old) {
		if v, ok := next[k]; !ok || v != old[k] {
			del = append(del, k)
		}
	}
	for _, k := range sortedKeys(next) {
		if v, ok := old[k]; !ok || v != next[k] {
			add = append(add, k)
		}
	}
	return del, add
}

// NftDeleteTable is the script that deletes the table if it exists.
func NftDeleteTable(table string) string {
	return fmt.Sprintf("add table ip %s\ndelete table ip %s\n", table, table)
}

func writeChainDecl(b *strings.Builder, t, name string) {
	if spec, ok := nftBaseChains[name]; ok {
		fmt.Fprintf(b, "add chain %s %s { %s }\n", t, name, spec)
		return
	}
	fmt.Fprintf(b, "add chain %s %s\n", t, name)
}

func writeRules(b *strings.Builder, t, name string, rules []string) {
	for _, r := range rules {
		fmt.Fprintf(b, "add rule %s %s %s\n", t, name, r)
	}
}

// writeElements writes one "add element" or "delete element" command for keys (values from
// values; a delete or a set has none).
func writeElements(b *strings.Builder, verb, t, name string, keys []string, values map[string]string) {
	if len(keys) == 0 {
		return
	}
	elems := make([]string, len(keys))
	for i, k := range keys {
		elems[i] = k
		if v := values[k]; v != "" {
			elems[i] = k + " : " + v
		}
	}
	fmt.Fprintf(b, "%s element %s %s { %s }\n", verb, t, name, strings.Join(elems, ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
