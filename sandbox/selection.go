package sandbox

import (
	"context"
	"fmt"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/selector"
)

// watchSelection records in the timeline every change of the side the
// selector (the read side) uses for a service, with the monitor's reason.
func (s *Sandbox) watchSelection(ctx context.Context) error {
	prev := s.sel.Snapshot()
	s.markRecorded(prev)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-prev.Changed():
		}
		cur := s.sel.Snapshot()
		for _, svc := range contract.Services() {
			was, now := prev.Active(svc), cur.Active(svc)
			if was == now && prev.IsDefault(svc) == cur.IsDefault(svc) {
				continue
			}
			detail := fmt.Sprintf("read side uses %s", now)
			if was != now {
				detail = fmt.Sprintf("read side switched %s → %s", was, now)
			}
			if sel := cur.Selection(svc); sel != nil {
				detail += fmt.Sprintf(" (epoch %d): %s", sel.Epoch, sel.Reason)
			}
			kind := EventSwitch
			if was == now {
				kind = EventInfo
			}
			s.events.add(Event{Kind: kind, Service: svc.String(), Side: now.String(), Detail: detail})
		}
		prev = cur
		s.markRecorded(cur)
	}
}

func (s *Sandbox) markRecorded(snap *selector.Snapshot) {
	s.recorded.Store(snap)
	s.recordedC.Notify()
}

// timelineCaughtUp waits, until ctx ends, for the timeline to hold every
// switch of the selector's current snapshot: the read side (Active) changes
// a moment before watchSelection records it, so a check that counts
// switches right after seeing one must wait for it.
func (s *Sandbox) timelineCaughtUp(ctx context.Context) error {
	return s.recordedC.Until(ctx, func() bool { return s.recorded.Load() == s.sel.Snapshot() })
}

func degradedOf(snap *selector.Snapshot, svc contract.Service) bool {
	sel := snap.Selection(svc)
	return sel != nil && sel.Degraded
}

// Degraded reports whether the published selection of service says degraded.
func (s *Sandbox) Degraded(service string) bool { return degradedOf(s.sel.Snapshot(), svcOf(service)) }

// Active returns the side the read side currently uses for service.
func (s *Sandbox) Active(service string) string {
	return s.sel.ActiveByName(service).String()
}

// svcOf returns the selector's Service of a service name.
func svcOf(name string) contract.Service {
	svc, _ := contract.ParseService(name)
	return svc
}

// stageEvents is how many input records a stage of a side has received, in
// all its instances.
func (s *Sandbox) stageEvents(side, stage string) float64 {
	return metricvalue.Sum(s.regs, "hotpair_stage_events_total", "service", stage, "side", side)
}
