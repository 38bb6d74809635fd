// Package events declares events.k8s.io/v1 events, which share storage with core/v1 events, and
// the conversion between the two forms (FromCore/ToCore) that the API server wraps around the
// storage codec. Validation applies the events.k8s.io API's strict rules. It must not import the API
// server or storage.
package events
