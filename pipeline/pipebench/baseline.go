package pipebench

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/kgoka"
	"github.com/hotpair/hotpair/statestore"
)

// cpuTime is the CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAllocs is how many heap objects the process has allocated so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// start is the moment a measurement starts: wall clock, CPU time and heap
// allocations so far.
type start struct {
	wall   time.Time
	cpu    time.Duration
	allocs uint64
}

func startNow() *start { return &start{wall: time.Now(), cpu: cpuTime(), allocs: heapAllocs()} }

// rate is events over the interval from s to now.
func (s *start) rate(events int) Rate {
	r := Rate{Seconds: time.Since(s.wall).Seconds(), CPUSeconds: (cpuTime() - s.cpu).Seconds()}
	r.EventsPerSec = float64(events) / r.Seconds
	if r.CPUSeconds > 0 {
		r.EventsPerCPUSec = float64(events) / r.CPUSeconds
	}
	if events > 0 {
		r.AllocsPerEvent = float64(heapAllocs()-s.allocs) / float64(events)
	}
	return r
}

// measure times f, which handles events.
func measure(events int, f func() error) (Rate, error) {
	s := startNow()
	if err := f(); err != nil {
		return Rate{}, err
	}
	return s.rate(events), nil
}

// ReadTopic reads topic from its start with one franz-go consumer until want
// records arrived, and returns how long that took.
func ReadTopic(ctx context.Context, brokers []string, auth *contract.KafkaAuth, topic string, want int) (time.Duration, error) {
	c := kafka.Cluster{Brokers: brokers, Auth: auth}
	cl, err := kafka.NewClient(c, "bench-raw-consumer", kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start, n := time.Now(), 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, fmt.Errorf("read %d of %d records of %s: %w", n, want, topic, ctx.Err())
		}
		n += fs.NumRecords()
	}
	return time.Since(start), nil
}

// bareGoka runs a goka processor that only counts the ad events per key
// (memory storage, a state write per event, as the aggregator does) until
// it counted want, and returns its rate from its first event to its last.
// It writes through goka's own sarama producer, or through hotpair's Kafka
// client layer (as the pipeline does) with hotpairClient.
func bareGoka(ctx context.Context, c kafka.Cluster, group string, want int, hotpairClient bool) (Rate, error) {
	var n atomic.Int64
	var first atomic.Pointer[start]
	done := make(chan Rate, 1)
	g := goka.DefineGroup(goka.Group(group),
		goka.Input(topicAdEvents, new(codec.Bytes), func(ctx goka.Context, _ any) {
			c, _ := ctx.Value().(int64)
			ctx.SetValue(c + 1)
			switch n.Add(1) {
			case 1:
				first.Store(startNow())
			case int64(want):
				done <- first.Load().rate(want)
			}
		}),
		goka.Persist(new(codec.Int64)),
	)
	sb, err := statestore.Config{Backend: statestore.BackendMemory}.Builder("bench", group, "", nil)
	if err != nil {
		return Rate{}, err
	}
	opts := append(kgoka.Builders{ClientID: group, Auth: c.Auth, Replication: 1}.ProcessorOptions(),
		goka.WithStorageBuilder(sb), goka.WithLogger(quietLogger{}))
	if !hotpairClient {
		opts = append(opts, goka.WithProducerBuilder(goka.ProducerBuilderWithConfig(kgoka.SaramaConfig(group, c.Auth))))
	}
	proc, err := goka.NewProcessor(c.Brokers, g, opts...)
	if err != nil {
		return Rate{}, err
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- proc.Run(pctx) }()
	select {
	case r := <-done:
		cancel()
		<-stopped
		return r, nil
	case err := <-stopped:
		return Rate{}, fmt.Errorf("processor stopped after %d of %d events: %v", n.Load(), want, err)
	case <-ctx.Done():
		return Rate{}, fmt.Errorf("counted %d of %d events: %w", n.Load(), want, ctx.Err())
	}
}

// quietLogger drops goka's logs.
type quietLogger struct{}

func (quietLogger) Print(...any)          {}
func (quietLogger) Println(...any)        {}
func (quietLogger) Printf(string, ...any) {}
