package dataplane

import (
	"sort"
	"sync"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// Sources keeps one table per source (the Ingress controller's, the Gateway controller's) and
// serves their merge (routes.Merge, sources in name order) whenever one of them changes, so each
// controller hands over only its own table.
type Sources struct {
	server *Server
	mu     sync.Mutex
	tables map[string]routes.Table
}

// NewSources feeds s.
func NewSources(s *Server) *Sources {
	return &Sources{server: s, tables: map[string]routes.Table{}}
}

// Set replaces source's table and hands the server the merge of every source's.
func (m *Sources) Set(source string, t routes.Table) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tables[source] = t
	names := make([]string, 0, len(m.tables))
	for n := range m.tables {
		names = append(names, n)
	}
	sort.Strings(names)
	all := make([]routes.Table, 0, len(names))
	for _, n := range names {
		all = append(all, m.tables[n])
	}
	return m.server.Set(routes.Merge(all...))
}

// Setter is Set for one source, the shape a controller's Set option takes.
func (m *Sources) Setter(source string) func(routes.Table) error {
	return func(t routes.Table) error { return m.Set(source, t) }
}
