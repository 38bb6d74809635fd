// Package crds holds the Gateway API's standard-channel CustomResourceDefinitions, release v1.6.3
// (the YAML of sigs.k8s.io/gateway-api's config/crd/standard, embedded unchanged), which every
// skiff API server creates at start-up when they are absent, so that a Gateway and an HTTPRoute
// can be written with nothing installed.
//
// The release is the one go.mod pins: the controller's Go types and the conformance suite skiff
// is checked with must match the definitions. It must not change the definitions it embeds; an
// operator who installs another release keeps it, since a definition that exists is left alone.
package crds
