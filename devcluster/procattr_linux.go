package devcluster

import "syscall"

// nodeProcAttr puts a node in its own process group, so that a SIGINT to
// `sepp dev` does not reach the nodes before dev decides how to stop them,
// and asks the kernel to send the node SIGTERM when the process that
// started it dies: a `sepp dev` or `sepp bench` killed outright (SIGKILL, or
// SIGPIPE from `sepp bench | head`) would otherwise leave its nodes running
// with nobody to stop them. SIGTERM lets a node shut down as it would on
// Ctrl-C.
func nodeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
