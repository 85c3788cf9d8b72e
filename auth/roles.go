package auth

import (
	"fmt"
	"strings"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Role is a set of calls a token may make.
type Role string

// The roles. Each allows exactly the calls of MethodRoles that name it; no
// role implies another, so give a token every role it needs.
const (
	// RoleProducer enqueues.
	RoleProducer Role = "producer"
	// RoleWorker reserves jobs and settles its leases.
	RoleWorker Role = "worker"
	// RoleViewer reads: server info, queue, job, dead-letter and cluster listings.
	RoleViewer Role = "viewer"
	// RoleOperator drains, requeues, deletes and dead-letters, pauses and
	// resumes, creates, updates, deletes and purges queues, and deletes,
	// runs, reschedules and reprioritises live jobs.
	RoleOperator Role = "operator"
	// RoleAdmin changes the cluster: join, remove, transfer leadership.
	RoleAdmin Role = "admin"
)

// Roles lists every role, in the order the docs give them.
func Roles() []Role { return []Role{RoleProducer, RoleWorker, RoleViewer, RoleOperator, RoleAdmin} }

// ParseRole checks a role name from the config.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles() {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, 0, 5)
	for _, r := range Roles() {
		names = append(names, string(r))
	}
	return "", fmt.Errorf("unknown role %q (roles: %s)", s, strings.Join(names, ", "))
}

// MethodRoles maps every method of the sepp services to the role that may
// call it.
var MethodRoles = map[string]Role{
	seppv1.QueueService_Enqueue_FullMethodName:      RoleProducer,
	seppv1.QueueService_EnqueueBatch_FullMethodName: RoleProducer,
	// WaitJob is the producer's half of enqueue-and-wait: a token that
	// enqueues must be able to await its jobs' outcomes without also
	// being a viewer of every queue.
	seppv1.QueueService_WaitJob_FullMethodName: RoleProducer,

	seppv1.QueueService_Reserve_FullMethodName:     RoleWorker,
	seppv1.QueueService_Ack_FullMethodName:         RoleWorker,
	seppv1.QueueService_AckBatch_FullMethodName:    RoleWorker,
	seppv1.QueueService_Nack_FullMethodName:        RoleWorker,
	seppv1.QueueService_Release_FullMethodName:     RoleWorker,
	seppv1.QueueService_ExtendLease_FullMethodName: RoleWorker,

	seppv1.QueueService_GetServerInfo_FullMethodName:   RoleViewer,
	seppv1.AdminService_ListQueues_FullMethodName:      RoleViewer,
	seppv1.AdminService_ListJobs_FullMethodName:        RoleViewer,
	seppv1.AdminService_GetJob_FullMethodName:          RoleViewer,
	seppv1.AdminService_ListDeadLetters_FullMethodName: RoleViewer,
	seppv1.AdminService_GetDeadLetter_FullMethodName:   RoleViewer,
	seppv1.AdminService_GetQueue_FullMethodName:        RoleViewer,
	seppv1.AdminService_ListRedrives_FullMethodName:    RoleViewer,
	seppv1.AdminService_GetRedrive_FullMethodName:      RoleViewer,
	seppv1.AdminService_PreviewRedrive_FullMethodName:  RoleViewer,
	seppv1.AdminService_GetSchedule_FullMethodName:     RoleViewer,
	seppv1.AdminService_ListSchedules_FullMethodName:   RoleViewer,
	seppv1.ClusterService_Status_FullMethodName:        RoleViewer,

	seppv1.QueueService_DrainDeadLetters_FullMethodName:   RoleOperator,
	seppv1.AdminService_RequeueDeadLetters_FullMethodName: RoleOperator,
	seppv1.AdminService_DeleteDeadLetters_FullMethodName:  RoleOperator,
	seppv1.AdminService_DeadLetterJobs_FullMethodName:     RoleOperator,
	seppv1.AdminService_PauseQueue_FullMethodName:         RoleOperator,
	seppv1.AdminService_ResumeQueue_FullMethodName:        RoleOperator,
	seppv1.AdminService_CreateQueue_FullMethodName:        RoleOperator,
	seppv1.AdminService_UpdateQueue_FullMethodName:        RoleOperator,
	seppv1.AdminService_DeleteQueue_FullMethodName:        RoleOperator,
	seppv1.AdminService_PurgeQueue_FullMethodName:         RoleOperator,
	seppv1.AdminService_DeleteJobs_FullMethodName:         RoleOperator,
	seppv1.AdminService_CancelJobs_FullMethodName:         RoleOperator,
	seppv1.AdminService_RunJobsNow_FullMethodName:         RoleOperator,
	seppv1.AdminService_RescheduleJobs_FullMethodName:     RoleOperator,
	seppv1.AdminService_SetJobsPriority_FullMethodName:    RoleOperator,
	seppv1.AdminService_StartRedrive_FullMethodName:       RoleOperator,
	seppv1.AdminService_PauseRedrive_FullMethodName:       RoleOperator,
	seppv1.AdminService_ResumeRedrive_FullMethodName:      RoleOperator,
	seppv1.AdminService_CancelRedrive_FullMethodName:      RoleOperator,
	seppv1.AdminService_CreateSchedule_FullMethodName:     RoleOperator,
	seppv1.AdminService_UpdateSchedule_FullMethodName:     RoleOperator,
	seppv1.AdminService_DeleteSchedule_FullMethodName:     RoleOperator,
	seppv1.AdminService_PauseSchedule_FullMethodName:      RoleOperator,
	seppv1.AdminService_ResumeSchedule_FullMethodName:     RoleOperator,

	seppv1.ClusterService_Join_FullMethodName:               RoleAdmin,
	seppv1.ClusterService_Remove_FullMethodName:             RoleAdmin,
	seppv1.ClusterService_TransferLeadership_FullMethodName: RoleAdmin,
}

// openServices answer without a token: health checks for load balancers and
// orchestrators, reflection for grpcurl. Neither reveals or changes jobs.
var openServices = []string{
	"/grpc.health.v1.Health/",
	// A member's facts (binary and command versions, memory limit): the
	// leader asks every member for them, and holds no token.
	seppv1.ClusterService_GetMemberFacts_FullMethodName,
	"/grpc.reflection.v1.ServerReflection/",
	"/grpc.reflection.v1alpha.ServerReflection/",
}

func isOpen(method string) bool {
	for _, p := range openServices {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}
