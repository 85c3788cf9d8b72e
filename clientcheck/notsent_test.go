package clientcheck_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// A write that never reached a server (every dial refused) has a known
// outcome: unavailable, nothing applied, not "outcome unknown".
func TestClient_RefusedDialIsUnavailableNotUnknownOutcome(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{dead}, client.WithRetryTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	calls := []struct {
		name string
		call func() error
	}{
		{"Enqueue", func() error {
			_, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithIdempotencyKey("k"))
			return err
		}},
		{"DrainDeadLetters", func() error {
			_, err := c.DrainDeadLetters(ctx, client.DrainOptions{Max: 1})
			return err
		}},
		{"ListQueues", func() error {
			_, err := c.ListQueues(ctx, false)
			return err
		}},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrUnknownOutcome) {
				t.Fatalf("%s to a refused address: %v; want ErrUnavailable and not ErrUnknownOutcome", tt.name, err)
			}
		})
	}
}
