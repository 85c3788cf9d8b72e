package rpctest_test

import (
	"strings"
	"testing"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/engine/enginetest"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// Every kind of write goes through the local backend's Propose and answers
// the result type a cluster.Node answers.
func TestLocalBackend_EveryOpAnswersItsResultType(t *testing.T) {
	enginetest.RequireEveryOp(t)
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range enginetest.EveryOp() {
		t.Run(c.Op.OpName(), func(t *testing.T) {
			v, err := b.Propose(t.Context(), c.Op)
			if err != nil && strings.Contains(err.Error(), "not an operation") {
				t.Fatalf("Propose does not carry %s: %v", c.Op.OpName(), err)
			}
			if !c.HasResultType(v) {
				t.Fatalf("Propose(%s) answered %T (err %v)", c.Op.OpName(), v, err)
			}
		})
	}
}
