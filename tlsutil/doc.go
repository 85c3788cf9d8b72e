// Package tlsutil holds sepp's TLS plumbing: certificates and CA pools read
// from PEM files and reloaded in place (on SIGHUP) without a restart, the
// tls.Configs of the gRPC API, the HTTP listener and the operator CLI, a
// mutual-TLS stream layer for the Raft transport (only holders of a
// certificate signed by the cluster CA can dial in or be dialled), and the
// generation of a throwaway CA with node and client certificates for
// `sepp dev --tls` and tests (ECDSA P-256, crypto/x509).
//
// It imports hashicorp/raft for the StreamLayer interface and the standard
// library only; it knows nothing of the rest of sepp.
package tlsutil
