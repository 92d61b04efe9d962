package monitor

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/httpserver"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// HistoryAnswer is the answer of GET /api/v1/history.
type HistoryAnswer struct {
	Service contract.Service `json:"service,omitempty"`
	Since   *time.Time       `json:"since,omitempty"`
	Until   time.Time        `json:"until"`
	Kinds   []string         `json:"kinds,omitempty"`
	// HeldSince is the oldest entry this replica holds: its copy of the
	// record goes back history.retention (decisions: the latest
	// history.switches). `hotpair history` reads older entries from Kafka.
	HeldSince *time.Time `json:"held_since,omitempty"`
	// Entries are the decision record's entries, oldest first.
	Entries []decisions.Entry `json:"entries"`
}

// apiError is the body of a 4xx answer.
type apiError struct {
	Error string `json:"error"`
}

// serveHistory answers GET /api/v1/history?service=&since=&until=&kind=
// from this replica's copy of the decision record. A bad parameter is a
// 400 naming it.
func (m *Monitor) serveHistory(w http.ResponseWriter, r *http.Request) {
	ans, f, err := m.parseHistoryQuery(r.URL.Query(), time.Now().UTC())
	if err != nil {
		httpserver.WriteJSON(w, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	ans.Entries = m.hist.entries(f)
	if t := m.hist.oldest(); !t.IsZero() {
		ans.HeldSince = &t
	}
	httpserver.WriteJSON(w, http.StatusOK, ans)
}

func (m *Monitor) parseHistoryQuery(q url.Values, now time.Time) (HistoryAnswer, decisions.Filter, error) {
	ans := HistoryAnswer{Until: now}
	var f decisions.Filter
	for k := range q {
		if !slices.Contains([]string{"service", "since", "until", "kind"}, k) {
			return ans, f, fmt.Errorf("unknown parameter %q: the parameters are service, since, until and kind", k)
		}
	}
	if s := q.Get("service"); s != "" {
		svc := contract.ServiceByName(s)
		if !slices.Contains(m.cfg.services(), svc) {
			return ans, f, fmt.Errorf("parameter service: %q is not one of %s", s, strings.Join(m.cfg.Services, ", "))
		}
		ans.Service, f.Service = svc, svc
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := decisions.ParseTime(v, now)
		if err != nil {
			return ans, f, fmt.Errorf("parameter %s: %v", p.name, err)
		}
		*p.dst = t
	}
	if !f.Since.IsZero() {
		ans.Since = &f.Since
	}
	if !f.Until.IsZero() {
		ans.Until = f.Until
	}
	if !f.Since.IsZero() && f.Since.After(ans.Until) {
		return ans, f, fmt.Errorf("parameter until: %s is before since %s", ans.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	kinds, err := decisions.ParseKinds(q.Get("kind"))
	if err != nil {
		return ans, f, fmt.Errorf("parameter kind: %v", err)
	}
	f.Kinds = kinds
	for _, k := range kinds {
		ans.Kinds = append(ans.Kinds, string(k))
	}
	return ans, f, nil
}
