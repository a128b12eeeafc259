package api

import (
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Hub roles in HubHealth.Role.
const (
	RoleLeader  = "leader"
	RoleStandby = "standby"
)

// NewEpoch names one leadership of a hub: "<term>.<uuid>". The term is the
// fencing token the database handed the leader (it only grows, across hubs
// and restarts); the uuid tells apart two runs that somehow share a term. A
// spawn refuses every request whose term is lower than the highest it has
// seen, so a deposed leader can change nothing.
func NewEpoch(term uint64) string {
	return strconv.FormatUint(term, 10) + "." + uuid.NewString()
}

// EpochTerm is the term of an epoch made by NewEpoch; 0 for any other
// epoch (a hub from before terms), which orders below every term.
func EpochTerm(epoch string) uint64 {
	head, _, ok := strings.Cut(epoch, ".")
	if !ok {
		return 0
	}
	t, err := strconv.ParseUint(head, 10, 64)
	if err != nil {
		return 0
	}
	return t
}
