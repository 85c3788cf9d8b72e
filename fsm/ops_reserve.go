package fsm

// A JobReserve whose request id outlives its leases
// (CommandVersionReserveRetry, versions.go; engine ReserveParams.RetryWindow):
// a retry whose first answer was lost gets its jobs back on the attempt they
// lost, even after their leases lapsed. It changes what the reserve, the
// lease expiry and a retried reserve do at apply, so the leader proposes it
// only while every member applies it; the version is the only carrier of the
// option.
