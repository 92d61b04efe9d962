package pipeline

import (
	"bytes"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// resourceMeter turns the process's cumulative CPU time and GC pause into
// the figures of one health window: each stage keeps its own, because each
// has its own windows. Every stage of a process reports the same process.
type resourceMeter struct {
	mu      sync.Mutex
	started bool
	cpu     time.Duration // user+system CPU time at the last take
	gcPause uint64        // total GC pause (ns) at the last take
}

// take returns the resources of the window since the last take (since the
// first call for the first window) and starts the next.
func (m *resourceMeter) take() *contract.InstanceResources {
	cpu := processCPU()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms) // a short stop-the-world, once per window
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &contract.InstanceResources{RSSBytes: residentBytes(), Goroutines: runtime.NumGoroutine()}
	if m.started {
		r.CPUSeconds = max(cpu-m.cpu, 0).Seconds()
		r.GCPauseSeconds = float64(ms.PauseTotalNs-m.gcPause) / 1e9
	}
	m.started, m.cpu, m.gcPause = true, cpu, ms.PauseTotalNs
	return r
}

// processCPU is the user+system CPU time the process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// residentBytes is the process's resident set: /proc/self/statm where
// there is one (Linux), else the memory the Go runtime has mapped and not
// returned to the system, which is what it can be resident at most.
func residentBytes() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := bytes.Fields(b); len(f) > 1 {
			if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 || s[1].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
