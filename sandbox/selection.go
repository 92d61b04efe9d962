package sandbox

import (
	"context"
	"fmt"

	"github.com/hotpair/hotpair/selector"
)

// watchSelection records in the timeline every change of the side the
// selector (the read side) uses for a service, with the monitor's reason.
func (s *Sandbox) watchSelection(ctx context.Context) error {
	prev := s.sel.Snapshot()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-prev.Changed():
		}
		cur := s.sel.Snapshot()
		for _, svc := range selector.Services() {
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
	}
}

// Active returns the side the read side currently uses for service.
func (s *Sandbox) Active(service string) string {
	return s.sel.ActiveByName(service).String()
}

// svcOf returns the selector's Service of a service name.
func svcOf(name string) selector.Service {
	svc, _ := selector.ParseService(name)
	return svc
}

// stageEvents is how many input records a stage of a side has received.
func (s *Sandbox) stageEvents(side, stage string) float64 {
	mfs, _ := s.regs.Gather() // what gathered, even if a part failed
	for _, mf := range mfs {
		if mf.GetName() != "hotpair_stage_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["service"] == stage && labels["side"] == side {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
