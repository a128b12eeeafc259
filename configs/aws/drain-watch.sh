#!/bin/sh
# Drains this instance's spawn before AWS ends the instance.
#
# Two notices end an instance: an Auto Scaling scale-in, which with the
# lifecycle hook of lifecycle-hook.json keeps the instance in
# Terminating:Wait (instance metadata autoscaling/target-lifecycle-state
# turns "Terminated"), and a spot interruption, announced two minutes
# ahead (spot/instance-action appears). On either, this script stops the
# spawn's unit: the spawn gets SIGTERM, tells the hub, which starts its
# crawlers on the other spawns before they stop here, and exits once the
# hub acknowledged its usage (systemd waits for that). Then it completes
# the lifecycle action, so the instance goes without waiting for the
# hook's timeout.
#
# Install (with blackwidow-drain-watch.service):
#   install -m 0755 configs/aws/drain-watch.sh /usr/local/bin/blackwidow-drain-watch
# Needs curl, and the aws CLI with autoscaling:CompleteLifecycleAction
# allowed to the instance's role. Settings, from the environment:
#   BW_ASG_NAME        the Auto Scaling group (default: the instance's
#                      aws:autoscaling:groupName tag, when instance
#                      metadata tags are on)
#   BW_LIFECYCLE_HOOK  the hook's name (lifecycle-hook.json)
#   BW_SPAWN_UNIT      the spawn's systemd unit
#   BW_POLL_SECONDS    how often the notices are checked
set -u
BW_LIFECYCLE_HOOK=${BW_LIFECYCLE_HOOK:-blackwidow-spawn-drain}
BW_SPAWN_UNIT=${BW_SPAWN_UNIT:-blackwidow-spawn.service}
BW_POLL_SECONDS=${BW_POLL_SECONDS:-5}
IMDS=http://169.254.169.254

# meta reads an instance metadata item with an IMDSv2 session token;
# nothing (and a failure) while the item does not exist.
meta() {
	tok=$(curl -sf -X PUT "$IMDS/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 60") || return 1
	curl -sf -H "X-aws-ec2-metadata-token: $tok" "$IMDS/latest/meta-data/$1"
}

state=
spot=
while :; do
	state=$(meta autoscaling/target-lifecycle-state || true)
	spot=$(meta spot/instance-action || true)
	if [ "$state" = "Terminated" ] || [ -n "$spot" ]; then
		break
	fi
	sleep "$BW_POLL_SECONDS"
done

logger -t blackwidow-drain "instance ending (lifecycle: ${state:-none}, spot: ${spot:-none}): draining the spawn"
# SIGTERM: the spawn hands its crawlers over, then exits; systemctl
# returns when it has (the unit's TimeoutStopSec bounds the wait).
systemctl stop "$BW_SPAWN_UNIT"
logger -t blackwidow-drain "spawn stopped"

if [ "$state" = "Terminated" ]; then
	asg=${BW_ASG_NAME:-$(meta tags/instance/aws:autoscaling:groupName || true)}
	region=$(meta placement/region)
	id=$(meta instance-id)
	aws autoscaling complete-lifecycle-action --region "$region" \
		--lifecycle-hook-name "$BW_LIFECYCLE_HOOK" --auto-scaling-group-name "$asg" \
		--instance-id "$id" --lifecycle-action-result CONTINUE
fi
