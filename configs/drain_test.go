package configs

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	spawnapp "github.com/blackwidow-crawl/blackwidow/spawn/app"
)

// spotNotice is how long before a spot interruption AWS announces it (the
// EC2 user guide's "two-minute warning").
const spotNotice = 2 * time.Minute

// lifecycleHook is configs/aws/lifecycle-hook.json, as aws autoscaling
// put-lifecycle-hook --cli-input-json reads it.
type lifecycleHook struct {
	LifecycleHookName    string
	AutoScalingGroupName string
	LifecycleTransition  string
	HeartbeatTimeout     int // seconds
	DefaultResult        string
}

func loadHook(t *testing.T) lifecycleHook {
	t.Helper()
	b, err := os.ReadFile("aws/lifecycle-hook.json")
	if err != nil {
		t.Fatal(err)
	}
	var h lifecycleHook
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		t.Fatalf("aws/lifecycle-hook.json: %v", err)
	}
	return h
}

// scriptDefault reads a BW_X=${BW_X:-value} default of the drain script.
func scriptDefault(t *testing.T, script, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `=\$\{` + name + `:-([^}]*)\}$`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("drain-watch.sh has no default for %s", name)
	}
	return m[1]
}

// TestDrainOnTermination_FitsTheNotices: the AWS lifecycle hook holds a
// terminating instance longer than a spawn may take to drain and stop
// (its stop budget), plus one poll of the watcher; a spot interruption's
// two minutes fit the same; the watcher stops the spawn's own unit, names
// the hook as configured, and is valid shell; the spawn's unit waits for
// the drain.
func TestDrainOnTermination_FitsTheNotices(t *testing.T) {
	hook := loadHook(t)
	b, err := os.ReadFile("aws/drain-watch.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	poll, err := strconv.Atoi(scriptDefault(t, script, "BW_POLL_SECONDS"))
	if err != nil || poll <= 0 {
		t.Fatalf("BW_POLL_SECONDS default %q", scriptDefault(t, script, "BW_POLL_SECONDS"))
	}
	need := spawnapp.StopBudget + time.Duration(poll)*time.Second

	if hook.LifecycleTransition != "autoscaling:EC2_INSTANCE_TERMINATING" {
		t.Errorf("lifecycle hook on %q, want autoscaling:EC2_INSTANCE_TERMINATING", hook.LifecycleTransition)
	}
	if hook.DefaultResult != "CONTINUE" {
		t.Errorf("lifecycle hook default result %q: an instance whose drain stalls must still go (CONTINUE)", hook.DefaultResult)
	}
	if got := time.Duration(hook.HeartbeatTimeout) * time.Second; got <= need {
		t.Errorf("lifecycle hook heartbeat timeout %s, want more than the %s a spawn may take to drain and stop, plus a poll", got, need)
	}
	if spotNotice <= need {
		t.Errorf("a spot interruption's %s notice does not fit the %s a spawn may take to drain and stop, plus a poll", spotNotice, need)
	}
	if got := scriptDefault(t, script, "BW_LIFECYCLE_HOOK"); got != hook.LifecycleHookName {
		t.Errorf("drain-watch.sh hook %q, lifecycle-hook.json %q", got, hook.LifecycleHookName)
	}
	spawnUnit := scriptDefault(t, script, "BW_SPAWN_UNIT")
	if _, err := os.Stat("systemd/" + spawnUnit); err != nil {
		t.Errorf("drain-watch.sh stops %s, which configs/systemd does not hold: %v", spawnUnit, err)
	}
	for _, want := range []string{`systemctl stop "$BW_SPAWN_UNIT"`, "autoscaling/target-lifecycle-state", "spot/instance-action",
		"complete-lifecycle-action", "--lifecycle-action-result CONTINUE"} {
		if !strings.Contains(script, want) {
			t.Errorf("drain-watch.sh does not contain %q", want)
		}
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		if out, err := exec.Command(sh, "-n", "aws/drain-watch.sh").CombinedOutput(); err != nil {
			t.Errorf("drain-watch.sh is not valid shell: %v\n%s", err, out)
		}
	}

	watch := loadUnit(t, "systemd/blackwidow-drain-watch.service")
	if exec := watch.get("Service", "ExecStart"); exec != "/usr/local/bin/blackwidow-drain-watch" {
		t.Errorf("blackwidow-drain-watch.service runs %q, not where the script is installed", exec)
	}
	env := watch.get("Service", "Environment")
	for _, kv := range []string{"BW_LIFECYCLE_HOOK=" + hook.LifecycleHookName, "BW_SPAWN_UNIT=" + spawnUnit, "BW_POLL_SECONDS=" + strconv.Itoa(poll)} {
		if !strings.Contains(" "+env+" ", " "+kv+" ") {
			t.Errorf("blackwidow-drain-watch.service Environment %q lacks %s", env, kv)
		}
	}
	spawn := loadUnit(t, "systemd/"+spawnUnit)
	if stop, err := parseTimeSpan(spawn.get("Service", "TimeoutStopSec")); err != nil || stop <= spawnapp.StopBudget {
		t.Errorf("%s TimeoutStopSec=%s: systemctl stop must wait for the %s drain and stop", spawnUnit, spawn.get("Service", "TimeoutStopSec"), spawnapp.StopBudget)
	}
}
