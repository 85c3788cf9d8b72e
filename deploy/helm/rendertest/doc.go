// Package rendertest renders the sepp Helm chart (../sepp) with Helm's own
// Go library and decodes every object strictly into the Kubernetes API
// types; each pod's config is loaded with sepp's own parser. It is a module
// of its own so that the server's go.mod does not pull Helm and Kubernetes.
package rendertest
