package core

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
)

// flappingHistory records 60 minutes of every service on both sides with a
// primary that is broken in every even minute from 10m to 38m (15 times).
func flappingHistory() []Record {
	var recs []Record
	for ws := t0; ws.Before(t0.Add(time.Hour)); ws = ws.Add(10 * sec) {
		we := ws.Add(10 * sec)
		m := int(ws.Sub(t0) / time.Minute)
		broken := m >= 10 && m < 40 && m%2 == 0
		for _, svc := range contract.Services() {
			for _, side := range contract.Sides() {
				f := healthyFleet(svc.Stage(), side)
				if side == contract.Primary && broken {
					f.lagMs = 90_000
				}
				for _, s := range f.samples(ws, we) {
					recs = append(recs, Record{Sample: s, ReceivedAt: we})
				}
			}
		}
	}
	return recs
}

func TestSimulateWhatIfGrace(t *testing.T) {
	hist := flappingHistory()
	cfg := DefaultConfig()
	cfg.Window = time.Minute

	res, err := Simulate(cfg, hist)
	if err != nil {
		t.Fatal(err)
	}
	// default grace: away once at the end of the first broken minute (11m),
	// back 10 minutes after the last broken minute (38m-39m) ended.
	if len(res.Switches) != 2*3 {
		t.Fatalf("%d switches: %+v", len(res.Switches), res.Switches)
	}
	for i, sw := range res.Switches {
		wantAt, wantTo, wantKind := t0.Add(11*time.Minute), "standby", KindFailover
		if i >= 3 {
			wantAt, wantTo, wantKind = t0.Add(49*time.Minute), "primary", KindReturn
		}
		if !sw.At.Equal(wantAt) || sw.To.String() != wantTo || sw.Kind != wantKind || sw.Reason == "" {
			t.Fatalf("switch %d: %+v", i, sw)
		}
	}
	if res.UnhealthyWindows["budget/primary"] != 15 || res.DegradedWindows[contract.ServiceBudget] != 0 || res.Windows != 60 {
		t.Fatalf("unhealthy %v degraded %v windows %d", res.UnhealthyWindows, res.DegradedWindows, res.Windows)
	}
	if res.Counters.Steps != uint64(len(hist)) {
		t.Fatalf("steps %d for %d records", res.Counters.Steps, len(hist))
	}

	// What if there were no grace period? Pinterest's flip-flop: away and
	// back every broken minute, 15 times.
	cfg.Decision.Grace = 0
	res, err = Simulate(cfg, hist)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Switches) != 2*15*3 {
		t.Fatalf("grace 0: %d switches", len(res.Switches))
	}
	// What if we needed 2 bad windows in a row? Never switches.
	cfg = DefaultConfig()
	cfg.Window, cfg.Decision.FailoverAfter = time.Minute, 2
	if res, _ = Simulate(cfg, hist); len(res.Switches) != 0 {
		t.Fatalf("failover_after 2: %d switches", len(res.Switches))
	}
}

// Simulate takes the history in any order and leaves it alone; records
// without a receive time count at their window_end.
func TestSimulateOrderAndReceiveTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = time.Minute
	hist := flappingHistory()
	want, err := Simulate(cfg, hist)
	if err != nil {
		t.Fatal(err)
	}
	shuffled := append([]Record(nil), hist...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	before := append([]Record(nil), shuffled...)
	got, err := Simulate(cfg, shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Switches, want.Switches) {
		t.Fatalf("order changed the switches:\n%+v\n%+v", got.Switches, want.Switches)
	}
	if !reflect.DeepEqual(before, shuffled) {
		t.Fatal("Simulate modified the history")
	}
	for i := range hist {
		hist[i].ReceivedAt = time.Time{}
	}
	got, err = Simulate(cfg, hist)
	if err != nil || len(got.Switches) != 6 || !got.Switches[0].At.Equal(t0.Add(11*time.Minute)) || !got.Switches[5].At.Equal(t0.Add(49*time.Minute)) {
		t.Fatalf("window_end as receive time: %v %+v", err, got.Switches)
	}
}

func TestSimulateRejects(t *testing.T) {
	if _, err := Simulate(DefaultConfig(), nil); !errors.Is(err, ErrEmptyHistory) {
		t.Fatalf("empty: %v", err)
	}
	dark := flappingHistory()[:10]
	for i := range dark {
		dark[i].Sample.Role = contract.RoleDark
	}
	if _, err := Simulate(DefaultConfig(), dark); !errors.Is(err, ErrEmptyHistory) {
		t.Fatalf("dark only: %v", err)
	}
	cfg := DefaultConfig()
	cfg.Rules.RateRatio = 2
	if _, err := Simulate(cfg, flappingHistory()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad config: %v", err)
	}
}

// A history that starts with a broken primary: the replay starts on the
// preferred side, so the first window's failover is a switch.
func TestSimulateFailoverInTheFirstWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = time.Minute
	var hist []Record
	for ws := t0; ws.Before(t0.Add(5 * time.Minute)); ws = ws.Add(10 * sec) {
		p, s := healthyFleet(contract.StagePacer, contract.Primary), healthyFleet(contract.StagePacer, contract.Standby)
		p.silent = true
		for _, smp := range append(p.samples(ws, ws.Add(10*sec)), s.samples(ws, ws.Add(10*sec))...) {
			hist = append(hist, Record{Sample: smp, ReceivedAt: ws.Add(10 * sec)})
		}
	}
	res, err := Simulate(cfg, hist)
	if err != nil {
		t.Fatal(err)
	}
	var pacer []Switch
	for _, sw := range res.Switches {
		if sw.Service == contract.ServicePacer {
			pacer = append(pacer, sw)
		}
	}
	if len(pacer) != 1 || !pacer[0].At.Equal(t0.Add(time.Minute)) || pacer[0].From != contract.Primary || pacer[0].Epoch != 2 ||
		!strings.Contains(pacer[0].Reason, "no_heartbeat: no sample received yet") {
		t.Fatalf("switches %+v", pacer)
	}
	if res.Final[contract.ServicePacer].Active != contract.Standby {
		t.Fatalf("final %+v", res.Final[contract.ServicePacer])
	}
}

// A history read from two clusters one after the other ends a little later
// on one side. The window the history ends within is not judged: the other
// side's next sample was just not recorded, and must not read as silence.
func TestSimulateDoesNotJudgeThePartialLastWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = time.Minute
	var hist []Record
	add := func(side contract.Side, ws time.Time) {
		for _, smp := range healthyFleet(contract.StageBudget, side).samples(ws, ws.Add(10*sec)) {
			hist = append(hist, Record{Sample: smp, ReceivedAt: ws.Add(10 * sec)})
		}
	}
	for ws := t0; ws.Before(t0.Add(5 * time.Minute)); ws = ws.Add(10 * sec) {
		add(contract.Primary, ws)
		add(contract.Standby, ws)
	}
	add(contract.Standby, t0.Add(5*time.Minute)) // received at 5m10s; primary's was not read
	res, err := Simulate(cfg, hist)
	if err != nil {
		t.Fatal(err)
	}
	if res.Windows != 5 || !res.To.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("%d windows up to %s, want 5 up to 5m", res.Windows, res.To.Sub(t0))
	}
	for _, sw := range res.Switches {
		if sw.Service == contract.ServiceBudget {
			t.Fatalf("switch in a window the history does not cover: %+v", sw)
		}
	}
	if _, err := Simulate(cfg, hist[:4]); !errors.Is(err, ErrShortHistory) {
		t.Fatalf("10 s of history with 1m windows: %v", err)
	}
}
