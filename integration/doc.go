// Package integration holds black-box tests of sepp as operators run it:
// real `sepp serve` processes on loopback (started through devcluster) and
// containers of the sepp image on a private docker network, driven by the
// Go client while nodes are killed, paused, wiped, restarted and cut off.
//
// Every call the clients make is recorded and checked afterwards by
// integration/history: no acknowledged job lost, no retried enqueue
// duplicated, no job leased twice at once, attempts and order as the spec
// says, and all replicas equal once the faults heal. Each fault reports its
// figures as `name: value unit` lines.
//
// The nemesis (nemesis*_test.go, docs/nemesis.md) draws seeded schedules of
// overlapping faults of every kind, partitions included (each node in its
// own network namespace), drives a second client built on the protos alone
// beside the Go client, and also fails a run when a node's restart does not
// come up and serve.
//
// Most tests run side by side (t.Parallel): at most go test's -parallel of
// them at once, GOMAXPROCS by default, so two on two cores. Their clusters
// share nothing: devcluster picks ports at random below the ephemeral
// range, and namespaces, cgroups, docker networks and compose projects carry
// names of their own. Two stay sequential and run before the others: the
// election count beside a CPU hog, which loads the whole machine on purpose,
// and the clock faults, which set the environment their nodes inherit.
//
// The tests build the binary once (TestMain) and are skipped under
// `go test -short`; the container tests are skipped, with the reason
// printed, where no Docker engine answers. The package has no non-test code
// and imports only the client, the public proto and devcluster.
package integration
