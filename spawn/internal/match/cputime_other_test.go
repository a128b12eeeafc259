//go:build !linux

package match

import "time"

// threadCPU is the processor time the calling thread has used; zero here,
// where it is not read.
func threadCPU() time.Duration { return 0 }
