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

# The Cassandra scripts (cassandra.sh, cassandra-cluster.sh) share what
# follows; they set JARS, HEAP, STATE, LOG and PIDFILE.

# find_java sets JAVA: BW_JAVA, else Java 17 where Debian installs it, else
# the java on the PATH (possibly none: the caller checks).
find_java() {
	if [ -n "${BW_JAVA:-}" ]; then
		JAVA=$BW_JAVA
	elif [ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java ]; then
		JAVA=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
	elif [ -x /usr/lib/jvm/java-17-openjdk-arm64/bin/java ]; then
		JAVA=/usr/lib/jvm/java-17-openjdk-arm64/bin/java
	else
		JAVA=$(command -v java || true)
	fi
}

# cassandra_pid prints the pid in $PIDFILE when it is a running Cassandra
# node, and fails otherwise.
cassandra_pid() {
	local pid
	[ -f "$PIDFILE" ] || return 1
	pid=$(cat "$PIDFILE")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	grep -q CassandraDaemon "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

# start_cassandra starts a Cassandra node in the background from the jars
# in $JARS and the configuration in $STATE, with a heap of $HEAP and the
# caller's own JVM options as arguments, logging to $LOG, and writes its pid
# to $PIDFILE.
start_cassandra() {
	local jamm=""
	for jamm in "$JARS"/jamm-*.jar; do break; done
	[ -f "$jamm" ] || die "no jamm jar in $JARS"
	local opts=(
		-Xms"$HEAP" -Xmx"$HEAP" -Xss256k
		-XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
		-XX:G1RSetUpdatingPauseTimePercent=5 -XX:MaxGCPauseMillis=300
		-XX:+UseTLAB -XX:+ResizeTLAB -XX:+PerfDisableSharedMem
		-Djava.net.preferIPv4Stack=true
		"-javaagent:$jamm"
		# From Cassandra 5.0's conf/jvm17-server.options.
		-Djdk.attach.allowAttachSelf=true
		--add-exports java.base/jdk.internal.misc=ALL-UNNAMED
		--add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
		--add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
		--add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
		--add-exports java.sql/java.sql=ALL-UNNAMED
		--add-exports java.base/java.lang.ref=ALL-UNNAMED
		--add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
		--add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
		--add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
		--add-opens java.base/java.lang.module=ALL-UNNAMED
		--add-opens java.base/jdk.internal.loader=ALL-UNNAMED
		--add-opens java.base/jdk.internal.ref=ALL-UNNAMED
		--add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
		--add-opens java.base/jdk.internal.math=ALL-UNNAMED
		--add-opens java.base/jdk.internal.module=ALL-UNNAMED
		--add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
		--add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
		--add-opens java.base/sun.nio.ch=ALL-UNNAMED
		--add-opens java.base/java.io=ALL-UNNAMED
		--add-opens java.base/java.lang.reflect=ALL-UNNAMED
		--add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
		--add-opens java.base/java.lang=ALL-UNNAMED
		--add-opens java.base/java.util=ALL-UNNAMED
		-Dio.netty.tryReflectionSetAccessible=true
		-Dio.netty.allocator.useCacheForAllThreads=true
		-Dio.netty.allocator.maxOrder=11
		# Where things are.
		"-Dcassandra.config=file://$STATE/cassandra.yaml"
		"-Dcassandra.storagedir=$STATE/data"
		"-Dcassandra.logdir=$STATE/logs"
		"-Dcassandra.triggers_dir=$STATE/triggers"
		"-Dlogback.configurationFile=$STATE/logback.xml"
		-Dcassandra-foreground=yes
		# Loopback nodes: gossip reaches every node at once, so the waits
		# sized for real networks are cut. The schema wait is a bound, not
		# a pause (a joining node goes on as soon as it has the seed's
		# schema): one second was too short for a node joining a seed that
		# had just started on two busy cores.
		-Dcassandra.skip_wait_for_gossip_to_settle=0
		-Dcassandra.ring_delay_ms=1000
		-Dcassandra.schema_delay_ms=30000
		"$@"
	)
	[ -f "$LOG" ] && mv -f "$LOG" "$LOG.1"
	# setsid: the node must survive the shell (and a Ctrl-C in it) that
	# started it; `down` stops it by its pid.
	setsid nohup "$JAVA" "${opts[@]}" -cp "$JARS/*" org.apache.cassandra.service.CassandraDaemon \
		>>"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
}
