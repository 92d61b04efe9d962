package selector

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
)

// offlineSelector is a selector that is never run; tests feed it reads the
// way its watch loops would.
func offlineSelector(t testing.TB) (*Selector, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	sel, err := New([]string{"127.0.0.1:1"}, WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	sel.setSession(true, time.Now())
	return sel, reg
}

// feed applies a selection as if the watch of svc had read it.
func feed(t testing.TB, sel *Selector, svc contract.Service, side contract.Side, epoch int64) {
	t.Helper()
	b, err := contract.Encode(selection(svc, side, epoch))
	if err != nil {
		t.Fatal(err)
	}
	sel.apply(svc, read{exists: true, mzxid: epoch + 100*int64(svc), data: b}, time.Now())
}

func newTestServer(t testing.TB, sel *Selector, reg prometheus.Gatherer) *Server {
	t.Helper()
	s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", Selector: sel, Gatherer: reg, MaxWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(h http.Handler, url string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	return rec
}

func decodeStatus(t testing.TB, body io.Reader) Status {
	t.Helper()
	var st Status
	if err := json.NewDecoder(body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestServerSelection(t *testing.T) {
	sel, reg := offlineSelector(t)
	h := newTestServer(t, sel, reg).Handler()

	rec := get(h, "/v1/selection")
	st := decodeStatus(t, rec.Body)
	if rec.Code != 200 || st.Tag != "1.p.p.p" || rec.Header().Get(TagHeader) != "1.p.p.p" || len(st.Services) != 3 {
		t.Fatalf("before any read: %d %+v", rec.Code, st)
	}
	if !st.Services[0].Default || st.Services[0].Epoch != nil || st.Services[0].Active != "primary" {
		t.Fatalf("budget before any read: %+v", st.Services[0])
	}
	if rec := get(h, "/readyz"); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before any read = %d, want 503", rec.Code)
	}

	feed(t, sel, contract.ServiceBudget, contract.Standby, 4)
	feed(t, sel, contract.ServicePacer, contract.Primary, 2)
	feed(t, sel, contract.ServiceBidder, contract.Primary, 1)
	st = decodeStatus(t, get(h, "/v1/selection").Body)
	b := st.Services[0]
	if st.Tag != "1.s4.p2.p1" || b.Active != "standby" || b.Default || *b.Epoch != 4 || b.Selection == nil || b.Selection.Reason != "test sets standby" {
		t.Fatalf("after reads: %+v / %+v", st, b)
	}
	if rec := get(h, "/readyz"); rec.Code != 200 {
		t.Fatalf("/readyz = %d after every read", rec.Code)
	}
	if rec := get(h, "/healthz"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"ready": true`) {
		t.Fatalf("/healthz = %d %s", rec.Code, rec.Body)
	}
	if rec := get(h, "/metrics"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `hotpair_selector_epoch{service="budget"} 4`) {
		t.Fatalf("/metrics = %d\n%s", rec.Code, rec.Body)
	}
	if rec := get(h, "/v1/selection?wait=soon"); rec.Code != 400 || !strings.Contains(rec.Body.String(), "wait") {
		t.Fatalf("bad wait: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/selection", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST = %d, want 405", rec.Code)
	}
}

func TestServerLongPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sel, reg := offlineSelector(t)
		feed(t, sel, contract.ServiceBudget, contract.Primary, 1)
		h := newTestServer(t, sel, reg).Handler()
		tag := sel.Snapshot().TagString()

		// A client that already has the current tag waits for a change.
		start := time.Now()
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- get(h, "/v1/selection?wait=30s&tag="+tag) }()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the long poll answered before anything changed")
		default:
		}
		feed(t, sel, contract.ServiceBudget, contract.Standby, 2)
		rec := <-done
		if st := decodeStatus(t, rec.Body); st.Tag != "1.s2.p.p" || time.Since(start) != 5*time.Second {
			t.Fatalf("long poll answered %s after %s, want the new tag after 5s", st.Tag, time.Since(start))
		}

		// Nothing changes: it answers the same tag after wait.
		start = time.Now()
		rec = get(h, "/v1/selection?wait=10s&tag=1.s2.p.p")
		if st := decodeStatus(t, rec.Body); st.Tag != "1.s2.p.p" || time.Since(start) != 10*time.Second {
			t.Fatalf("idle long poll: %s after %s", st.Tag, time.Since(start))
		}
		// A health-only rewrite (same side, same epoch) does not wake it.
		start = time.Now()
		go func() { done <- get(h, "/v1/selection?wait=10s&tag=1.s2.p.p") }()
		time.Sleep(time.Second)
		b, _ := contract.Encode(selection(contract.ServiceBudget, contract.Standby, 2))
		sel.apply(contract.ServiceBudget, read{exists: true, mzxid: 999, data: b}, time.Now())
		<-done
		if time.Since(start) != 10*time.Second {
			t.Fatalf("a rewrite with the same tag woke the long poll after %s", time.Since(start))
		}
		// A stale tag answers at once; wait is clamped to MaxWait.
		start = time.Now()
		get(h, "/v1/selection?wait=30s&tag=1.p1.p.p")
		get(h, "/v1/selection?wait=1h&tag=1.s2.p.p")
		if time.Since(start) != time.Minute {
			t.Fatalf("stale tag + clamped wait took %s, want 1m (MaxWait)", time.Since(start))
		}
	})
}

func TestServerStream(t *testing.T) {
	sel, reg := offlineSelector(t)
	srv := httptest.NewServer(newTestServer(t, sel, reg).Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/v1/selection/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := make(chan Status)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var st Status
				if json.Unmarshal([]byte(data), &st) == nil {
					events <- st
				}
			}
		}
	}()
	next := func() Status {
		select {
		case st := <-events:
			return st
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5s")
		}
		return Status{}
	}
	if st := next(); st.Tag != "1.p.p.p" {
		t.Fatalf("first event tag %s", st.Tag)
	}
	feed(t, sel, contract.ServicePacer, contract.Standby, 3)
	if st := next(); st.Tag != "1.p.s3.p" || st.Services[1].Active != "standby" {
		t.Fatalf("event after the change: %+v", st)
	}
}

func TestNewServerValidates(t *testing.T) {
	if _, err := NewServer(ServerOptions{Addr: ":0"}); err == nil {
		t.Error("no selector: no error")
	}
	sel, _ := offlineSelector(t)
	if _, err := NewServer(ServerOptions{Selector: sel}); err == nil {
		t.Error("no address: no error")
	}
}
