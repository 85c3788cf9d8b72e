package auth

import "context"

type callerKey struct{}

func withCaller(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callerKey{}, name)
}

// Caller is the name of the token that made an operator or admin call, as
// the unary interceptor authorized it: what an audit record names. It is ""
// when admin auth is off or the call is of another role.
func Caller(ctx context.Context) string {
	name, _ := ctx.Value(callerKey{}).(string)
	return name
}
