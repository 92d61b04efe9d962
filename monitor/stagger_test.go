package monitor

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
)

// Both sides taking a new build within the stagger period is flagged in the
// published selection, the metric and the status API; one side alone is not.
func TestStaggeredDeployIsFlagged(t *testing.T) {
	addr := zktest.Addr(t)
	paths := testRoot(t)
	p, s := startClusters(t)
	pf, sf := newFleet(t, p), newFleet(t, s)
	cfg := testConfig("stagger", addr, paths, p, s)
	cfg.HTTP.Listen = "127.0.0.1:0"
	r := startReplica(t, cfg)
	w := watchSelection(t, testConn(t, addr, nil), paths, contract.ServiceBudget)
	w.waitActive(t, contract.Primary, 4*tWindow+5*time.Second)

	pf.set(func(f *fleet) { f.build = "b2" })
	waitFor(t, &w.changes, 3*tWindow+time.Second, "primary's new build to be published", func() bool {
		l := w.last()
		return l.Sides[contract.Primary].Build == "b2"
	})
	if l := w.last(); l.StaggerViolation != "" {
		t.Fatalf("one side on a new build flagged: %q", l.StaggerViolation)
	}
	sf.set(func(f *fleet) { f.build = "b2" })
	waitFor(t, &w.changes, 3*tWindow+time.Second, "the stagger violation to be published", func() bool {
		return w.last().StaggerViolation != ""
	})
	if v := w.last().StaggerViolation; !strings.Contains(v, `primary runs "b2"`) || !strings.Contains(v, `standby runs "b2"`) {
		t.Fatalf("stagger violation without the builds: %q", v)
	}
	if got := r.metric(t, "hotpair_service_stagger_violation", "service", "budget"); got != 1 {
		t.Fatalf("hotpair_service_stagger_violation{budget} = %g", got)
	}

	// The same through the replica's own HTTP endpoint.
	resp, err := http.Get("http://" + r.HTTPAddr() + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Replica == nil || !st.Replica.Leader || st.Services[0].Selection == nil || st.Services[0].Selection.StaggerViolation == "" ||
		st.Services[0].Local == nil || st.Services[0].Local.StaggerViolation == "" {
		t.Fatalf("/api/v1/status: %+v", st)
	}
	for path, want := range map[string]string{"/readyz": "ready", "/healthz": "ok",
		"/metrics": `hotpair_service_stagger_violation{service="budget"} 1`} {
		resp, err := http.Get("http://" + r.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("GET %s = %d, want %q in:\n%.2000s", path, resp.StatusCode, want, b)
		}
	}
}
