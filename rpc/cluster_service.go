package rpc

import (
	"context"
	"encoding/hex"

	"github.com/sepp-io/sepp/cluster"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// clusterService implements sepp.v1.ClusterService over the Backend.
type clusterService struct {
	seppv1.UnimplementedClusterServiceServer
	*server
}

func (s *clusterService) Status(ctx context.Context, req *seppv1.StatusRequest) (*seppv1.StatusResponse, error) {
	st, err := s.b.Status(ctx)
	if err != nil {
		return nil, err
	}
	resp := clusterStatusToProto(st)
	if req.GetIncludeDigest() {
		d, idx := s.b.StateDigest()
		resp.StateDigest, resp.DigestIndex = hex.EncodeToString(d[:]), idx
	}
	return resp, nil
}

func (s *clusterService) Join(ctx context.Context, req *seppv1.JoinRequest) (*seppv1.JoinResponse, error) {
	n := req.GetNode()
	if n == nil {
		return nil, invalidField("node", "", "is required")
	}
	if err := validateName("node.id", n.GetId(), true); err != nil {
		return nil, err
	}
	if n.GetRaftAddr() == "" {
		return nil, invalidField("node.raft_addr", "host:port", "is required (host:port of the node's Raft transport)")
	}
	if err := validateName("node.raft_addr", n.GetRaftAddr(), true); err != nil {
		return nil, err
	}
	if err := validateName("node.grpc_addr", n.GetGrpcAddr(), false); err != nil {
		return nil, err
	}
	if err := validateName("node.http_addr", n.GetHttpAddr(), false); err != nil {
		return nil, err
	}
	info := cluster.NodeInfo{ID: n.GetId(), RaftAddr: n.GetRaftAddr(), GRPCAddr: n.GetGrpcAddr(), HTTPAddr: n.GetHttpAddr()}
	if err := s.b.Join(ctx, info); err != nil {
		return nil, err
	}
	return &seppv1.JoinResponse{}, nil
}

func (s *clusterService) Remove(ctx context.Context, req *seppv1.RemoveRequest) (*seppv1.RemoveResponse, error) {
	if err := validateName("node_id", req.GetNodeId(), true); err != nil {
		return nil, err
	}
	if err := s.b.Remove(ctx, req.GetNodeId()); err != nil {
		return nil, err
	}
	return &seppv1.RemoveResponse{}, nil
}

// GetMemberFacts is this node's report of itself, which the leader asks
// every member for (cluster/facts.go).
func (s *clusterService) GetMemberFacts(context.Context, *seppv1.GetMemberFactsRequest) (*seppv1.GetMemberFactsResponse, error) {
	f := s.b.SelfFacts()
	return &seppv1.GetMemberFactsResponse{Facts: memberFactsToProto(&f), Clock: timestampOrNil(f.Clock)}, nil
}

func (s *clusterService) TransferLeadership(ctx context.Context, req *seppv1.TransferLeadershipRequest) (*seppv1.TransferLeadershipResponse, error) {
	if err := validateName("to_node_id", req.GetToNodeId(), false); err != nil {
		return nil, err
	}
	if err := s.b.TransferLeadership(ctx, req.GetToNodeId()); err != nil {
		return nil, err
	}
	return &seppv1.TransferLeadershipResponse{}, nil
}
