package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine/enginetest"
)

// Every kind of write goes through Propose and answers its result type,
// whether the engine accepts it or refuses it (zero-valued ops mostly fail
// validation, on the leader or at apply).
func TestPropose_EveryOpAnswersItsResultType(t *testing.T) {
	enginetest.RequireEveryOp(t)
	n := startSingle(t, t.TempDir())
	defer shutdown(t, n)
	enqueueUntilReady(t, n, []byte("x"))
	for _, c := range enginetest.EveryOp() {
		t.Run(c.Op.OpName(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			v, err := n.Propose(ctx, c.Op)
			if err != nil && strings.Contains(err.Error(), "not an operation") {
				t.Fatalf("Propose does not carry %s: %v", c.Op.OpName(), err)
			}
			if !c.HasResultType(v) {
				t.Fatalf("Propose(%s) answered %T (err %v)", c.Op.OpName(), v, err)
			}
		})
	}
}
