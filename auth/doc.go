// Package auth authorizes calls to sepp's gRPC API with bearer tokens.
//
// Operators configure tokens by the SHA-256 of the token (never the token
// itself; `sepp hash-token` prints it), each with a name and roles. One
// Authorizer gives a unary and a stream interceptor that read the
// "authorization: Bearer <token>" metadata, hash it, compare it with every
// configured hash in constant time, and check the role the method needs
// against the token's roles: a missing or unknown token is Unauthenticated,
// a known token without the role PermissionDenied. The rule table covers
// every method of the three sepp services; a method without a rule is denied,
// and a test fails when the generated services gain one. The standard health
// and reflection services stay open, so load balancers and grpcurl work.
//
// Decisions are counted in Prometheus metrics by method, result and token
// name. The token never reaches a log or a metric label: only its name does.
package auth
