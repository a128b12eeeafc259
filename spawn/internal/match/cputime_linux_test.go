//go:build linux

package match

import (
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD, which the syscall package does
// not name.
const rusageThread = 1

// threadCPU is the processor time the calling thread has used, so that a
// benchmark on a shared machine can time its own work and not the other
// processes'; the caller keeps to one thread (runtime.LockOSThread). Zero
// where it cannot be read.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
