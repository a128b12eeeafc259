# Shared by the service scripts (sourced, not run). The caller defines
# answers (is the service ready?) and log_tail (print its recent log), and
# sets SERVICE to its name for messages.

die() { echo "$SERVICE: $*" >&2; exit 1; }

# await_ready PID TIMEOUT PAUSE EXITED TIMED_OUT waits until answers
# succeeds. It fails with EXITED when process PID ends first (removing
# $PIDFILE), and with TIMED_OUT after TIMEOUT seconds; both show the log.
await_ready() {
	local pid=$1 timeout=$2 pause=$3 exited=$4 timed_out=$5
	local deadline=$((SECONDS + timeout))
	while ! answers; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$PIDFILE"
			log_tail
			die "$exited"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			log_tail
			die "$timed_out"
		fi
		sleep "$pause"
	done
}
