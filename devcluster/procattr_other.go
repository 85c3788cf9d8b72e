//go:build !linux

package devcluster

import "syscall"

// nodeProcAttr puts a node in its own process group, so that a SIGINT to
// `sepp dev` does not reach the nodes before dev decides how to stop them.
// Only Linux can tie a child's life to its parent's (see
// procattr_linux.go); elsewhere nodes outlive a parent killed outright.
func nodeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
