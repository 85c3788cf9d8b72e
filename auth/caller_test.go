package auth

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// The unary interceptor names the token of an operator call (what a
// redrive's audit record keeps) and of no other role's call.
func TestUnaryInterceptor_NamesTheCallerOfAnOperatorCall(t *testing.T) {
	tok, err := GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	hash, err := HashToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := ParseHash(hash)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New([]Token{{Name: "alice", Roles: []Role{RoleViewer, RoleOperator}, SHA256: sum}}, Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+tok))
	for _, tc := range []struct {
		method, want string
	}{
		{seppv1.AdminService_StartRedrive_FullMethodName, "alice"},
		{seppv1.AdminService_CancelRedrive_FullMethodName, "alice"},
		{seppv1.AdminService_ListRedrives_FullMethodName, ""},
	} {
		var got string
		_, err := a.UnaryInterceptor()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: tc.method}, func(ctx context.Context, _ any) (any, error) {
			got = Caller(ctx)
			return nil, nil
		})
		if err != nil || got != tc.want {
			t.Fatalf("%s: caller %q (%v), want %q", tc.method, got, err, tc.want)
		}
	}
}
