package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// PluginFactory builds a plugin from its (possibly empty) JSON arguments.
type PluginFactory func(args json.RawMessage, h Handle) (Plugin, error)

// Registry maps plugin names to factories.
type Registry map[string]PluginFactory

// Options are the dependencies a profile's plugins may use.
type Options struct {
	Client          kubernetes.Interface
	InformerFactory informers.SharedInformerFactory
	EventRecorder   record.EventRecorder
	Parallelism     int
}

type weightedScorePlugin struct {
	ScorePlugin
	weight int64
}

// Framework is one profile: its plugins in order per extension point.
type Framework struct {
	profile     Profile
	opts        Options
	parallel    Parallelizer
	plugins     map[string]Plugin
	preFilter   []PreFilterPlugin
	filter      []FilterPlugin
	postFilter  []PostFilterPlugin
	preScore    []PreScorePlugin
	score       []weightedScorePlugin
	reserve     []ReservePlugin
	preBind     []PreBindPlugin
	bind        []BindPlugin
	enqueueExts []EnqueueExtensions
	// scoreBufs holds *scoreBuffers: RunScorePlugins' memory, reused across cycles.
	scoreBufs sync.Pool
}

var _ Handle = &Framework{}

// NewFramework instantiates a profile. defaults is the plugin set enabled at
// every extension point each implements (Kubernetes' multiPoint defaults),
// modified by the profile's enabled/disabled lists.
func NewFramework(reg Registry, defaults []PluginRef, profile Profile, opts Options) (*Framework, error) {
	// Filter and score work is CPU-bound: workers beyond GOMAXPROCS only add switching, so the
	// configured parallelism is an upper bound.
	f := &Framework{profile: profile, opts: opts, parallel: NewParallelizer(min(opts.Parallelism, runtime.GOMAXPROCS(0))), plugins: map[string]Plugin{}}
	args := map[string]json.RawMessage{}
	for _, pc := range profile.PluginConfig {
		if _, ok := reg[pc.Name]; !ok {
			return nil, fmt.Errorf("profile %q: pluginConfig for unknown plugin %q", profile.SchedulerName, pc.Name)
		}
		args[pc.Name] = pc.Args
	}
	plugins := profile.Plugins
	if plugins == nil {
		plugins = &Plugins{}
	}
	instance := func(name string) (Plugin, error) {
		if p, ok := f.plugins[name]; ok {
			return p, nil
		}
		factory, ok := reg[name]
		if !ok {
			return nil, fmt.Errorf("profile %q: unknown plugin %q", profile.SchedulerName, name)
		}
		p, err := factory(args[name], f)
		if err != nil {
			return nil, fmt.Errorf("profile %q: plugin %q: %w", profile.SchedulerName, name, err)
		}
		f.plugins[name] = p
		return p, nil
	}
	type point struct {
		set *PluginSet
		add func(p Plugin, weight int32) bool
	}
	points := []point{
		{&plugins.PreFilter, func(p Plugin, _ int32) bool { return appendIf(&f.preFilter, p) }},
		{&plugins.Filter, func(p Plugin, _ int32) bool { return appendIf(&f.filter, p) }},
		{&plugins.PostFilter, func(p Plugin, _ int32) bool { return appendIf(&f.postFilter, p) }},
		{&plugins.PreScore, func(p Plugin, _ int32) bool { return appendIf(&f.preScore, p) }},
		{&plugins.Score, func(p Plugin, w int32) bool {
			sp, ok := p.(ScorePlugin)
			if !ok {
				return false
			}
			if w == 0 {
				w = 1
			}
			for i := range f.score {
				if f.score[i].Name() == p.Name() {
					f.score[i].weight = int64(w)
					return true
				}
			}
			f.score = append(f.score, weightedScorePlugin{sp, int64(w)})
			return true
		}},
		{&plugins.Reserve, func(p Plugin, _ int32) bool { return appendIf(&f.reserve, p) }},
		{&plugins.PreBind, func(p Plugin, _ int32) bool { return appendIf(&f.preBind, p) }},
		{&plugins.Bind, func(p Plugin, _ int32) bool { return appendIf(&f.bind, p) }},
	}
	disabled := func(set *PluginSet, name string) bool {
		for _, sets := range []*PluginSet{&plugins.MultiPoint, set} {
			for _, d := range sets.Disabled {
				if d.Name == "*" || d.Name == name {
					return true
				}
			}
		}
		return false
	}
	multi := append(slices.Clone(defaults), plugins.MultiPoint.Enabled...)
	for i, ref := range multi {
		isDefault := i < len(defaults)
		for _, pt := range points {
			if isDefault && disabled(pt.set, ref.Name) {
				continue
			}
			p, err := instance(ref.Name)
			if err != nil {
				return nil, err
			}
			pt.add(p, ref.Weight)
		}
	}
	for _, pt := range points {
		for _, ref := range pt.set.Enabled {
			p, err := instance(ref.Name)
			if err != nil {
				return nil, err
			}
			if !pt.add(p, ref.Weight) {
				return nil, fmt.Errorf("profile %q: plugin %q does not implement the extension point it is enabled at", profile.SchedulerName, ref.Name)
			}
		}
	}
	for _, p := range f.plugins {
		if e, ok := p.(EnqueueExtensions); ok && f.inUse(p.Name()) {
			f.enqueueExts = append(f.enqueueExts, e)
		}
	}
	if len(f.bind) == 0 {
		return nil, fmt.Errorf("profile %q: at least one bind plugin is needed", profile.SchedulerName)
	}
	return f, nil
}

// appendIf appends p to list when p implements T, and reports whether it did.
func appendIf[T Plugin](list *[]T, p Plugin) bool {
	t, ok := p.(T)
	if !ok {
		return false
	}
	for _, existing := range *list {
		if existing.Name() == p.Name() {
			return true
		}
	}
	*list = append(*list, t)
	return true
}

func (f *Framework) inUse(name string) bool {
	has := func(list []string) bool { return slices.Contains(list, name) }
	return has(names(f.preFilter)) || has(names(f.filter)) || has(names(f.postFilter)) || has(names(f.preScore)) ||
		has(names(f.reserve)) || has(names(f.preBind)) || has(names(f.bind)) || slices.ContainsFunc(f.score, func(w weightedScorePlugin) bool { return w.Name() == name })
}

func names[T Plugin](list []T) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.Name()
	}
	return out
}

// PluginsAt lists the enabled plugin names per extension point, for logs and tests.
func (f *Framework) PluginsAt() map[string][]string {
	score := make([]string, len(f.score))
	for i, s := range f.score {
		score[i] = fmt.Sprintf("%s:%d", s.Name(), s.weight)
	}
	return map[string][]string{
		"preFilter": names(f.preFilter), "filter": names(f.filter), "postFilter": names(f.postFilter),
		"preScore": names(f.preScore), "score": score, "reserve": names(f.reserve), "preBind": names(f.preBind), "bind": names(f.bind),
	}
}

// ProfileName is the profile's schedulerName.
func (f *Framework) ProfileName() string { return f.profile.SchedulerName }

// PercentageOfNodesToScore is the profile's override, or nil.
func (f *Framework) PercentageOfNodesToScore() *int32 { return f.profile.PercentageOfNodesToScore }

// ClientSet returns the API client.
func (f *Framework) ClientSet() kubernetes.Interface { return f.opts.Client }

// SharedInformerFactory returns the scheduler's informers.
func (f *Framework) SharedInformerFactory() informers.SharedInformerFactory {
	return f.opts.InformerFactory
}

// EventRecorder returns the profile's event recorder.
func (f *Framework) EventRecorder() record.EventRecorder { return f.opts.EventRecorder }

// Parallelizer returns the bounded worker pool.
func (f *Framework) Parallelizer() Parallelizer { return f.parallel }

// EnqueueExtensions returns the enabled plugins that declare requeue events.
func (f *Framework) EnqueueExtensions() []EnqueueExtensions { return f.enqueueExts }

// HasPostFilter reports whether any PostFilter plugin (preemption) is enabled.
func (f *Framework) HasPostFilter() bool { return len(f.postFilter) > 0 }

// RunPreFilterPlugins runs PreFilter plugins in order and stops at the first rejection.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes NodeInfoLister) *Status {
	for _, p := range f.preFilter {
		s := p.PreFilter(ctx, state, pod, nodes)
		if s.IsSkip() {
			state.SkipFilterPlugins[p.Name()] = true
			continue
		}
		if !s.IsSuccess() {
			if s.Code() == Error {
				return AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
			}
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunPreFilterExtensionAddPod tells every PreFilter plugin that ran (not skipped) that
// podToAdd is now on nodeInfo.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, nodeInfo *NodeInfo) *Status {
	return f.runPreFilterExtension(state, func(ext PreFilterExtensions) *Status {
		return ext.AddPod(ctx, state, podToSchedule, podToAdd, nodeInfo)
	})
}

// RunPreFilterExtensionRemovePod is RunPreFilterExtensionAddPod for a pod taken off nodeInfo.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, nodeInfo *NodeInfo) *Status {
	return f.runPreFilterExtension(state, func(ext PreFilterExtensions) *Status {
		return ext.RemovePod(ctx, state, podToSchedule, podToRemove, nodeInfo)
	})
}

func (f *Framework) runPreFilterExtension(state *CycleState, call func(PreFilterExtensions) *Status) *Status {
	for _, p := range f.preFilter {
		if state.SkipFilterPlugins[p.Name()] {
			continue
		}
		e, ok := p.(PreFilterExtender)
		if !ok || e.PreFilterExtensions() == nil {
			continue
		}
		if s := call(e.PreFilterExtensions()); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running PreFilterExtensions of plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	return nil
}

// RunFilterPlugins runs Filter plugins and returns the first non-success.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	// Preemption calls this per candidate node: skipping in the loop allocates nothing.
	return f.runFilters(ctx, f.filter, state.SkipFilterPlugins, state, pod, nodeInfo)
}

// FiltersToRun are the Filter plugins of a cycle: those PreFilter did not skip. A cycle looks them
// up once and runs them on every node with RunFilters, instead of a map lookup per plugin per node.
func (f *Framework) FiltersToRun(state *CycleState) []FilterPlugin {
	if len(state.SkipFilterPlugins) == 0 {
		return f.filter
	}
	out := make([]FilterPlugin, 0, len(f.filter))
	for _, p := range f.filter {
		if !state.SkipFilterPlugins[p.Name()] {
			out = append(out, p)
		}
	}
	return out
}

// RunFilters runs filters (from FiltersToRun) on one node, stopping at the first rejection.
func (f *Framework) RunFilters(ctx context.Context, filters []FilterPlugin, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	return f.runFilters(ctx, filters, nil, state, pod, nodeInfo)
}

// runFilters runs filters less those in skip (a lookup in a nil map costs nothing).
func (f *Framework) runFilters(ctx context.Context, filters []FilterPlugin, skip map[string]bool, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	for _, p := range filters {
		if skip[p.Name()] {
			continue
		}
		if s := p.Filter(ctx, state, pod, nodeInfo); !s.IsSuccess() {
			if s.Code() == Error {
				return AsStatus(fmt.Errorf("running Filter plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
			}
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// PluginVerdict is one plugin's answer for one node, for explanations.
type PluginVerdict struct {
	Plugin string
	Point  string
	Status *Status
	Score  int64
}

// RunFilterPluginsAll runs every Filter plugin (not stopping at the first
// rejection) and returns each verdict, so an operator sees all reasons.
func (f *Framework) RunFilterPluginsAll(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) []PluginVerdict {
	out := make([]PluginVerdict, 0, len(f.filter))
	for _, p := range f.filter {
		if state.SkipFilterPlugins[p.Name()] {
			out = append(out, PluginVerdict{Plugin: p.Name(), Point: "Filter", Status: NewStatus(Skip)})
			continue
		}
		out = append(out, PluginVerdict{Plugin: p.Name(), Point: "Filter", Status: p.Filter(ctx, state, pod, nodeInfo).WithPlugin(p.Name())})
	}
	return out
}

// RunPostFilterPlugins runs PostFilter plugins until one succeeds.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, filtered NodeToStatus, nodes NodeInfoLister) (*PostFilterResult, *Status) {
	var last *Status
	for _, p := range f.postFilter {
		r, s := p.PostFilter(ctx, state, pod, filtered, nodes)
		if s.IsSuccess() {
			return r, s
		}
		if s.Code() == Error {
			return nil, s.WithPlugin(p.Name())
		}
		last = s.WithPlugin(p.Name())
	}
	if last == nil {
		return nil, NewStatus(Unschedulable, "no PostFilter plugin")
	}
	return nil, last
}

// RunPreScorePlugins runs PreScore plugins; Skip marks the plugin's Score skipped.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, feasible []*NodeInfo, all NodeInfoLister) *Status {
	for _, p := range f.preScore {
		s := p.PreScore(ctx, state, pod, feasible, all)
		if s.IsSkip() {
			state.SkipScorePlugins[p.Name()] = true
			continue
		}
		if !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running PreScore plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	return nil
}

// PluginScores holds every score plugin's weighted, normalized scores per node.
type PluginScores struct {
	Plugins []string
	// Scores[i][j] is plugin j's weighted score of node i.
	Scores [][]int64
	Totals []int64

	buf  *scoreBuffers
	pool *sync.Pool
}

// Release hands the scores' memory to the next cycle; s must not be used after. A cycle scores
// hundreds of nodes per plugin, and allocating that anew each time was a third of the
// scheduler's garbage. Scores that are kept (explanations) are simply not released.
func (s *PluginScores) Release() {
	if s == nil || s.buf == nil {
		return
	}
	buf, pool := s.buf, s.pool
	*s = PluginScores{}
	buf.scores = s
	pool.Put(buf)
}

// scoreBuffers is what one RunScorePlugins call needs, kept between cycles.
type scoreBuffers struct {
	active  []weightedScorePlugin
	names   []string
	raw     []int64
	norm    []NodeScore
	weights []int64
	rows    [][]int64
	totals  []int64
	scores  *PluginScores
}

// grow returns b[:n], reallocating only when b is too short.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// RunScorePlugins scores feasible nodes in parallel, normalizes per plugin and applies weights.
// The caller releases the result once it has picked a node.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (*PluginScores, *Status) {
	buf, _ := f.scoreBufs.Get().(*scoreBuffers)
	if buf == nil {
		buf = &scoreBuffers{}
	}
	out, st := f.runScorePlugins(ctx, state, pod, nodes, buf)
	if out == nil {
		f.scoreBufs.Put(buf)
	}
	return out, st
}

func (f *Framework) runScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, buf *scoreBuffers) (*PluginScores, *Status) {
	active := buf.active[:0]
	for _, p := range f.score {
		if !state.SkipScorePlugins[p.Name()] {
			active = append(active, p)
		}
	}
	buf.active = active
	n := len(nodes)
	// Plugin j's raw scores are raw[j*n : (j+1)*n]. They are bare numbers: the scoring workers
	// write no pointers (a node name per plugin and node was a write barrier and a cache miss on
	// the Node each, most of the scoring loop's own time while the collector ran).
	buf.raw = grow(buf.raw, n*len(active))
	var firstErr error
	errOnce := make(chan error, 1)
	f.parallel.Until(ctx, n, func(i int) {
		for j, p := range active {
			s, st := p.Score(ctx, state, pod, nodes[i])
			if !st.IsSuccess() {
				select {
				case errOnce <- fmt.Errorf("running Score plugin %q on node %q: %w", p.Name(), nodes[i].Node().Name, st.AsError()):
				default:
				}
				return
			}
			buf.raw[j*n+i] = s
		}
	})
	select {
	case firstErr = <-errOnce:
		return nil, AsStatus(firstErr)
	default:
	}
	buf.names = buf.names[:0]
	for _, p := range active {
		buf.names = append(buf.names, p.Name())
	}
	// One backing array for every node's row.
	buf.weights = grow(buf.weights, n*len(active))
	buf.rows = grow(buf.rows, n)
	for i := range buf.rows {
		buf.rows[i] = buf.weights[i*len(active) : (i+1)*len(active) : (i+1)*len(active)]
	}
	buf.totals = grow(buf.totals, n)
	clear(buf.totals)
	for j, p := range active {
		raw := buf.raw[j*n : (j+1)*n : (j+1)*n]
		if ext := p.ScoreExtensions(); ext != nil {
			// Normalizers see the NodeScoreList shape, names included.
			buf.norm = grow(buf.norm, n)
			for i := range raw {
				buf.norm[i] = NodeScore{Name: nodes[i].Node().Name, Score: raw[i]}
			}
			if st := ext.NormalizeScore(ctx, state, pod, buf.norm); !st.IsSuccess() {
				return nil, AsStatus(fmt.Errorf("normalizing scores of plugin %q: %w", p.Name(), st.AsError()))
			}
			for i := range raw {
				raw[i] = buf.norm[i].Score
			}
		}
		for i, score := range raw {
			if score > MaxNodeScore || score < MinNodeScore {
				return nil, AsStatus(fmt.Errorf("plugin %q returned score %d for node %q outside [%d, %d]", p.Name(), score, nodes[i].Node().Name, MinNodeScore, MaxNodeScore))
			}
			w := score * p.weight
			buf.rows[i][j] = w
			buf.totals[i] += w
		}
	}
	// The node names stay referenced by nothing once the cycle is over.
	clear(buf.norm)
	out := buf.scores
	if out == nil {
		out = &PluginScores{}
	}
	buf.scores = nil
	*out = PluginScores{Plugins: buf.names, Scores: buf.rows, Totals: buf.totals, buf: buf, pool: &f.scoreBufs}
	return out, nil
}

// RunReservePlugins reserves in order; on failure the caller must Unreserve.
func (f *Framework) RunReservePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status {
	for _, p := range f.reserve {
		if s := p.Reserve(ctx, state, pod, nodeName); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running Reserve plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	return nil
}

// RunUnreservePlugins undoes reservations in reverse order.
func (f *Framework) RunUnreservePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	for i := len(f.reserve) - 1; i >= 0; i-- {
		f.reserve[i].Unreserve(ctx, state, pod, nodeName)
	}
}

// RunPreBindPlugins runs every PreBind plugin in order, stopping at the first failure.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status {
	for _, p := range f.preBind {
		s := p.PreBind(ctx, state, pod, nodeName)
		if s.IsSkip() || s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			return s.WithPlugin(p.Name())
		}
		return AsStatus(fmt.Errorf("running PreBind plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
	}
	return nil
}

// RunBindPlugins asks binders in order until one does not Skip.
func (f *Framework) RunBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status {
	for _, p := range f.bind {
		s := p.Bind(ctx, state, pod, nodeName)
		if s.IsSkip() {
			continue
		}
		if !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running Bind plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
		return nil
	}
	return NewStatus(Error, "no bind plugin accepted the pod")
}

// DefaultNormalizeScore scales scores to [0, maxPriority]; reverse flips them
// (for plugins where a higher raw value is worse).
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s.Score)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / highest
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
}

// RunPreFilterPluginsEach runs every PreFilter plugin (not stopping at a
// rejection) and returns each verdict, for explanations. Skips are recorded
// in state as in RunPreFilterPlugins.
func (f *Framework) RunPreFilterPluginsEach(ctx context.Context, state *CycleState, pod *v1.Pod, nodes NodeInfoLister) []PluginVerdict {
	out := make([]PluginVerdict, 0, len(f.preFilter))
	for _, p := range f.preFilter {
		s := p.PreFilter(ctx, state, pod, nodes)
		if s.IsSkip() {
			state.SkipFilterPlugins[p.Name()] = true
		}
		out = append(out, PluginVerdict{Plugin: p.Name(), Point: "PreFilter", Status: s.WithPlugin(p.Name())})
	}
	return out
}
