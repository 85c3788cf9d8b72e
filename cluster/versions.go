package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/fsm"
)

// Members' command versions.
//
// A leader proposes a newer command (such as a JobAckBatch) only once every
// member's replicated metadata says its binary applies it (ops.go). A node
// records its own version in the first entry of each term it leads; the
// others' versions the leader asks for, through Config.PeerCommandVersion
// (sepp serve asks each member's gRPC health service whether it serves
// CommandVersionService(v)), and records each answer with Announce. A member
// that cannot be asked (no gRPC address, unreachable, an older binary that
// knows no such service) keeps version 1, and the leader keeps proposing
// the older commands.

// CommandVersionService is the gRPC health service name a node serves for
// each command version v its binary applies: "sepp.command.v2" and so on.
func CommandVersionService(v uint32) string { return fmt.Sprintf("sepp.command.v%d", v) }

const (
	// versionAskTimeout bounds one question to one member.
	versionAskTimeout = 2 * time.Second
	// versionRetry is how soon members that could not be asked are asked
	// again; versionRecheck how often a leader that knows every member's
	// version looks for new members.
	versionRetry   = 2 * time.Second
	versionRecheck = 10 * time.Second
)

// learnMemberVersions runs while this node leads and its duties are done.
func (n *Node) learnMemberVersions(ctx context.Context) {
	if n.cfg.PeerCommandVersion == nil {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n.askMemberVersions(ctx) {
			// Every member applies this binary's commands: a config held
			// back for an older member (membersConfig) can go out now.
			if !n.setConfig(ctx) {
				return
			}
			t.Reset(versionRecheck)
		} else {
			t.Reset(versionRetry)
		}
	}
}

// askMemberVersions asks every other member whose metadata does not say it
// applies this binary's CommandVersion, and records what each answers. It
// reports whether every member is now known to apply it.
func (n *Node) askMemberVersions(ctx context.Context) (allKnown bool) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	allKnown = true
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.NodeID) {
			continue // recorded by this term's first entry
		}
		meta, ok := n.fsm.Node(string(s.ID))
		if ok && meta.AppliesCommandVersion(fsm.CommandVersion) {
			continue
		}
		allKnown = false
		if !ok || meta.GRPCAddr == "" {
			continue // no address to ask yet
		}
		info := nodeInfoFromMeta(meta)
		actx, cancel := context.WithTimeout(ctx, versionAskTimeout)
		v, err := n.cfg.PeerCommandVersion(actx, info)
		cancel()
		if err != nil {
			n.log.Debug("cannot ask a member its command version", "member", s.ID, "error", err)
			continue
		}
		if v <= meta.MaxCommandVersion || v < 2 {
			continue // nothing new to record
		}
		if err := n.Announce(ctx, info, min(v, fsm.CommandVersion)); err != nil {
			n.log.Debug("cannot record a member's command version", "member", s.ID, "error", err)
			continue
		}
		n.log.Info("member's command version recorded", "member", s.ID, "version", min(v, fsm.CommandVersion))
		allKnown = allKnown && v >= fsm.CommandVersion
	}
	return allKnown
}
