package registry

// SubresourceStrategy is the update semantics of a subresource that is a view of the whole object
// (status, finalize, and later approval, ephemeralcontainers, resize): PrepareForUpdate keeps from old
// everything the subresource may not change; ValidateUpdate checks the result. It may implement the
// hooks above and ResetFieldsProvider as a Strategy does.
type SubresourceStrategy = StatusStrategy

// Subresource is one "update the object through this strategy" subresource.
type Subresource struct {
	Strategy SubresourceStrategy
	// Verbs lists the verbs served; nil means get, update and patch.
	Verbs []string
}

// SubresourceStrategy returns the strategy a write to subresource goes through: Status for "status",
// otherwise the entry of Subresources. ok is false when the resource has no such subresource.
func (r *Resource) SubresourceStrategy(name string) (strategy SubresourceStrategy, verbs []string, ok bool) {
	if name == "status" && r.Status != nil {
		return r.Status, nil, true
	}
	if sub, found := r.Subresources[name]; found && sub != nil && sub.Strategy != nil {
		return sub.Strategy, sub.Verbs, true
	}
	return nil, nil, false
}
