package sandbox

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/statestore"
)

// A flap of a stage the side does not run cannot happen: it is refused,
// not listed as in force.
func TestFlapThatCannotPauseIsRefused(t *testing.T) {
	p, err := pipeline.New(pipeline.Options{Brokers: []string{"127.0.0.1:9"}, Side: contract.Primary,
		Stages: []contract.Stage{contract.StageAggregator}, Storage: statestore.Config{Backend: statestore.BackendMemory}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Sandbox{opts: Options{Timing: ScenarioTiming()}, log: slog.New(slog.DiscardHandler),
		pipes: map[string]*pipeRun{contract.Primary.String(): {ps: sidePipes{p}}}}
	s.faults = newFaults(s)
	_, err = s.Inject(FaultSpec{Kind: FaultFlap, Service: contract.StageBudget.String(), Side: contract.Primary.String()})
	if !errors.Is(err, pipeline.ErrNoSuchStage) {
		t.Fatalf("Inject = %v, want ErrNoSuchStage", err)
	}
	if _, err := s.Inject(FaultSpec{Kind: FaultCrashDispatch}); !errors.Is(err, ErrBadFault) {
		t.Fatalf("crash-dispatcher without a dark target: %v, want ErrBadFault", err)
	}
	if _, err := s.Inject(FaultSpec{Kind: FaultCrashReplica}); !errors.Is(err, ErrBadFault) {
		t.Fatalf("crash-dispatcher-replica without dispatcher replicas: %v, want ErrBadFault", err)
	}
	if f := s.Faults(); len(f) != 0 {
		t.Fatalf("a fault that did not happen is listed: %+v", f)
	}
}

// A pause that fails while flapping ends the flapping and is reported.
func TestFlapReportsAFailedPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var calls []bool
		pause := func(paused bool) error {
			calls = append(calls, paused)
			if len(calls) == 2 {
				return errors.New("stage gone")
			}
			return nil
		}
		var failed error
		done := make(chan struct{})
		go func() {
			defer close(done)
			flap(pause, time.Second, make(chan struct{}), func(err error) { failed = err })
		}()
		<-done // returns by itself after the failure
		if len(calls) != 2 || calls[0] || !calls[1] || failed == nil || failed.Error() != "stage gone" {
			t.Fatalf("calls %v, reported %v; want resume, a failed pause, and the failure reported", calls, failed)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Fatalf("flapped for %s, want 2 periods", took)
		}
	})
}

// stop-dark and crash-dispatcher need a dark target: without one they are refused and not listed;
// it names no side or service.
func TestStopDarkNeedsADarkTarget(t *testing.T) {
	s := &Sandbox{opts: Options{Timing: ScenarioTiming()}, log: slog.New(slog.DiscardHandler), clusters: map[string]*cluster{}}
	s.faults = newFaults(s)
	if _, err := s.Inject(FaultSpec{Kind: FaultStopDark}); !errors.Is(err, ErrBadFault) {
		t.Fatalf("stop-dark without a dark target: %v, want ErrBadFault", err)
	}
	if _, err := s.Inject(FaultSpec{Kind: FaultStopDark, Side: contract.Primary.String()}); !errors.Is(err, ErrBadFault) {
		t.Fatalf("stop-dark with a side: %v, want ErrBadFault", err)
	}
	if f := s.Faults(); len(f) != 0 {
		t.Fatalf("a fault that did not happen is listed: %+v", f)
	}
}
