package framework

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodIndex keeps, for a set of nodes, the counts InterPodAffinity and PodTopologySpread would
// otherwise compute by visiting every pod on every node in each scheduling cycle:
//
//   - pods grouped by namespace and label set (LabelGroup), with each group's number of pods per
//     domain (node label value) of every registered topology key, so a label selector is matched
//     once per group instead of once per pod;
//   - the nodes per domain of every registered key (a spread constraint's domains exist even
//     when they hold no matching pod);
//   - existing pods' affinity terms, identical terms merged (TermCount), with the number of pods
//     carrying the term per domain of the term's topology key, so a term is matched against the
//     incoming pod once.
//
// The owner (the scheduler cache's snapshot) calls AddNode and RemoveNode with a node's
// NodeInfo whenever the node or its pods change; queries hold the same results as the scans.
// Topology keys are registered on first use (EnsureKeys, from the snapshot's nodes). A PodIndex
// is safe for concurrent use.
type PodIndex struct {
	mu       sync.Mutex
	numNodes int
	groups   map[string]*LabelGroup
	// keys maps each registered topology key to its domains' node counts.
	keys  map[string]map[string]int
	terms map[string]*TermCount
}

// LabelGroup is every indexed pod with one namespace and label set.
type LabelGroup struct {
	Namespace string
	Labels    labels.Set
	// Terminating groups hold pods with a deletionTimestamp (spreading ignores them).
	Terminating bool
	pods        int
	// counts maps a registered topology key to domain value to pods of the group there.
	counts map[string]map[string]int64
}

// TermKind says which of a pod's affinity term lists a TermCount came from.
type TermKind uint8

// Kinds of existing pods' terms.
const (
	RequiredAffinity TermKind = iota
	RequiredAntiAffinity
	PreferredAffinity
	PreferredAntiAffinity
)

// TermCount is one distinct affinity term of existing pods and how many pods carry it per
// domain of its topology key (pods on nodes without the key are not counted).
type TermCount struct {
	Kind   TermKind
	Term   AffinityTerm
	Weight int32
	pods   int
	// Domains maps the node label value of Term.TopologyKey to the pods carrying the term there.
	Domains map[string]int64
}

// NewPodIndex returns an empty index.
func NewPodIndex() *PodIndex {
	return &PodIndex{groups: map[string]*LabelGroup{}, keys: map[string]map[string]int{}, terms: map[string]*TermCount{}}
}

// AddNode counts a node and its pods.
func (x *PodIndex) AddNode(ni *NodeInfo) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.applyNode(ni, 1)
}

// RemoveNode uncounts what AddNode counted for the same NodeInfo.
func (x *PodIndex) RemoveNode(ni *NodeInfo) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.applyNode(ni, -1)
}

func (x *PodIndex) applyNode(ni *NodeInfo, sign int) {
	node := ni.Node()
	if node == nil {
		return
	}
	x.numNodes += sign
	for key, domains := range x.keys {
		if v, ok := node.Labels[key]; ok {
			addCount(domains, v, sign)
		}
	}
	for _, pi := range ni.Pods {
		x.applyPod(node, pi, sign)
	}
}

func addCount[N int | int64](m map[string]N, k string, n N) {
	if c := m[k] + n; c != 0 {
		m[k] = c
	} else {
		delete(m, k)
	}
}

func (x *PodIndex) applyPod(node *v1.Node, pi *PodInfo, sign int) {
	gk := pi.labelGroupKey()
	g := x.groups[gk]
	if g == nil && sign > 0 {
		g = &LabelGroup{Namespace: pi.Pod.Namespace, Labels: labels.Set(pi.Pod.Labels), Terminating: pi.Pod.DeletionTimestamp != nil, counts: map[string]map[string]int64{}}
		x.groups[gk] = g
	}
	if g != nil {
		g.pods += sign
		for key := range x.keys {
			if v, ok := node.Labels[key]; ok {
				m := g.counts[key]
				if m == nil {
					m = map[string]int64{}
					g.counts[key] = m
				}
				addCount(m, v, int64(sign))
			}
		}
		if g.pods <= 0 {
			delete(x.groups, gk)
		}
	}
	for i := range pi.RequiredAffinityTerms {
		x.applyTerm(node, RequiredAffinity, &pi.RequiredAffinityTerms[i], 0, sign)
	}
	for i := range pi.RequiredAntiAffinityTerms {
		x.applyTerm(node, RequiredAntiAffinity, &pi.RequiredAntiAffinityTerms[i], 0, sign)
	}
	for i := range pi.PreferredAffinityTerms {
		x.applyTerm(node, PreferredAffinity, &pi.PreferredAffinityTerms[i].AffinityTerm, pi.PreferredAffinityTerms[i].Weight, sign)
	}
	for i := range pi.PreferredAntiAffinityTerms {
		x.applyTerm(node, PreferredAntiAffinity, &pi.PreferredAntiAffinityTerms[i].AffinityTerm, pi.PreferredAntiAffinityTerms[i].Weight, sign)
	}
}

func (x *PodIndex) applyTerm(node *v1.Node, kind TermKind, t *AffinityTerm, weight int32, sign int) {
	k := termKey(kind, t, weight)
	tc := x.terms[k]
	if tc == nil {
		if sign < 0 {
			return
		}
		tc = &TermCount{Kind: kind, Term: *t, Weight: weight, Domains: map[string]int64{}}
		x.terms[k] = tc
	}
	tc.pods += sign
	if v, ok := node.Labels[t.TopologyKey]; ok {
		addCount(tc.Domains, v, int64(sign))
	}
	if tc.pods <= 0 {
		delete(x.terms, k)
	}
}

// labelGroupKey is the pod's LabelGroup key, computed once per PodInfo when NewPodInfo made it.
func (pi *PodInfo) labelGroupKey() string {
	if pi.groupKey != "" {
		return pi.groupKey
	}
	return groupKey(pi.Pod)
}

// groupKey is the namespace, the sorted labels and the terminating bit.
func groupKey(pod *v1.Pod) string {
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(pod.Namespace)
	if pod.DeletionTimestamp != nil {
		b.WriteString("\x00T")
	} else {
		b.WriteString("\x00R")
	}
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte(1)
		b.WriteString(pod.Labels[k])
	}
	return b.String()
}

// selectorKey renders a selector so that equal strings select the same set; Nothing and
// Everything both print as "" and are told apart.
func selectorKey(s labels.Selector) string {
	if s == nil || s == labels.Nothing() {
		return "\x00nothing"
	}
	return s.String()
}

func termKey(kind TermKind, t *AffinityTerm, weight int32) string {
	ns := make([]string, 0, len(t.Namespaces))
	for n := range t.Namespaces {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return strconv.Itoa(int(kind)) + "\x01" + strconv.Itoa(int(weight)) + "\x01" + t.TopologyKey + "\x01" +
		strings.Join(ns, ",") + "\x01" + selectorKey(t.NamespaceSelector) + "\x01" + selectorKey(t.Selector)
}

// EnsureKeys registers topology keys not yet indexed, counting them from nodes (the same nodes
// the index follows).
func (x *PodIndex) EnsureKeys(nodes []*NodeInfo, keys ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var missing []string
	for _, k := range keys {
		if _, ok := x.keys[k]; !ok && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return
	}
	for _, k := range missing {
		x.keys[k] = map[string]int{}
	}
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		for _, k := range missing {
			v, ok := node.Labels[k]
			if !ok {
				continue
			}
			x.keys[k][v]++
			for _, pi := range ni.Pods {
				g := x.groups[pi.labelGroupKey()]
				if g == nil {
					continue
				}
				m := g.counts[k]
				if m == nil {
					m = map[string]int64{}
					g.counts[k] = m
				}
				m[v]++
			}
		}
	}
}

// NodesWithKey is the number of indexed nodes carrying a registered key.
func (x *PodIndex) NodesWithKey(key string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, c := range x.keys[key] {
		n += c
	}
	return n
}

// NumNodes is the number of indexed nodes.
func (x *PodIndex) NumNodes() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.numNodes
}

// Domains calls fn for every domain value of a registered key that has nodes.
func (x *PodIndex) Domains(key string, fn func(value string)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for v := range x.keys[key] {
		fn(v)
	}
}

// CountMatching adds, per domain of the registered key, the pods of every group for which match
// is true. Terminating groups are skipped unless withTerminating.
func (x *PodIndex) CountMatching(key string, withTerminating bool, match func(g *LabelGroup) bool, add func(value string, n int64)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, g := range x.groups {
		if g.Terminating && !withTerminating {
			continue
		}
		if !match(g) {
			continue
		}
		for v, n := range g.counts[key] {
			add(v, n)
		}
	}
}

// Groups calls fn with every group (callers match a selector once per group).
func (x *PodIndex) Groups(fn func(g *LabelGroup)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, g := range x.groups {
		fn(g)
	}
}

// GroupCounts returns a group's pods per domain of a registered key; read only, and only
// while the index does not change (during one scheduling cycle).
func (g *LabelGroup) GroupCounts(key string) map[string]int64 { return g.counts[key] }

// Terms calls fn with every distinct existing-pod term of kind.
func (x *PodIndex) Terms(kind TermKind, fn func(tc *TermCount)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, tc := range x.terms {
		if tc.Kind == kind {
			fn(tc)
		}
	}
}

// Matches is AffinityTerm.Matches(pod, nil) for the group's pods.
func (g *LabelGroup) Matches(t *AffinityTerm) bool {
	if t.Namespaces.Has(g.Namespace) || t.NamespaceSelector.Matches(labels.Set(nil)) {
		return t.Selector.Matches(g.Labels)
	}
	return false
}

// PodIndexLister is implemented by node listers that keep a PodIndex (nil when they have none,
// as for a snapshot changed for a simulation).
type PodIndexLister interface {
	PodIndex() *PodIndex
}

// IndexOf returns the lister's index, or nil.
func IndexOf(l NodeInfoLister) *PodIndex {
	if il, ok := l.(PodIndexLister); ok {
		return il.PodIndex()
	}
	return nil
}
