package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/pipeline"
	"github.com/hotpair/hotpair/selector"
)

// campaign is one simulated campaign of the load generator.
type campaign struct {
	ID         string
	Advertiser string
	Timezone   string
	// Weight is the campaign's share of ad requests; PriceMicros what one
	// impression costs at bid multiplier 1 (a click costs 5×).
	Weight      float64
	PriceMicros int64
	// Budget is the row written to the budgets topic (nil: none).
	Budget *contract.Budget
}

// loadGen stands in for the ads servers. For every simulated ad request it
// takes the selector's request tag, asks the retriever which candidate
// campaigns may serve and at what pacing rate and bid multiplier, serves
// each with probability = its rate, and dual-writes the resulting ad events.
// Spend, caps and pacing close the loop: a capped campaign stops serving, a
// throttled one serves less.
type loadGen struct {
	campaigns []campaign
	byID      map[string]*campaign
	cum       []float64 // cumulative weights
	qps       float64   // ad requests per second at the curve's mean
	day       time.Duration
	topics    contract.Topics // the names the ingester writes (it adds no prefix)
	in        *pipeline.Ingester
	sel       *selector.Selector
	ret       *selector.Retriever
	start     time.Time

	mu     sync.Mutex
	rng    *rand.Rand
	seq    int64
	paused bool
	factor float64          // multiplies the request rate (1: as usual)
	truth  map[string]int64 // campaign -> micros written
	stats  LoadStats

	// lostMu guards what the sides lost; the Ingester reports losses from
	// its own goroutines and from Write, which request calls under mu.
	lostMu   sync.Mutex
	lost     map[string]map[string]int64 // side -> campaign -> micros lost
	lostRecs map[string]int64            // side -> ad events lost
}

// LoadStats counts the load generator's work.
type LoadStats struct {
	Requests  int64 `json:"requests"`
	Served    int64 `json:"served"`
	Throttled int64 `json:"throttled"` // candidates the pacing rate turned away
	Capped    int64 `json:"capped"`    // candidates filtered as capped
	Fallbacks int64 `json:"fallbacks"` // values answered from the other side
	OwnTag    int64 `json:"own_snapshot"`
	Events    int64 `json:"events"`
	Micros    int64 `json:"micros"`
}

const candidatesPerRequest = 4

// campaignZones are the time zones of the sandbox's campaigns, in turn.
var campaignZones = []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "America/Los_Angeles", "Asia/Tokyo"}

// newCampaigns makes n campaigns in zones (in turn) with budgets sized
// against the rest of their day: some are throttled by the pacer, some cap
// within minutes, one reaches its lifetime budget, one has no budget row.
// A zone this machine does not know is an error.
func newCampaigns(zones []string, n int, qps float64, now time.Time, rng *rand.Rand) ([]campaign, error) {
	factors := []float64{0.3, 0.6, 1, 2, 4}
	cs := make([]campaign, n)
	total := 0.0
	for i := range cs {
		cs[i] = campaign{
			ID: fmt.Sprintf("camp-%03d", i), Advertiser: fmt.Sprintf("adv-%02d", i%7),
			Timezone: zones[i%len(zones)], Weight: 0.5 + rng.Float64(),
			PriceMicros: int64(500 + rng.IntN(4500)),
		}
		total += cs[i].Weight
	}
	for i := range cs {
		c := &cs[i]
		// Expected spend per second at rate 1: requests × chance to be a
		// candidate × price (10% clicks at 5× the price).
		perSec := qps * candidatesPerRequest * c.Weight / total * float64(c.PriceMicros) * 1.4
		loc, err := contract.LoadZone(c.Timezone)
		if err != nil {
			return nil, fmt.Errorf("sandbox: campaign %s: %w (is the time zone database installed? apt-get install tzdata)", c.ID, err)
		}
		l := now.In(loc)
		y, m, d := l.Date()
		left := time.Date(y, m, d+1, 0, 0, 0, 0, loc).Sub(now).Seconds()
		daily := perSec * left * factors[i%len(factors)]
		b := &contract.Budget{V: 1, Campaign: c.ID, Advertiser: c.Advertiser, DailyMicros: int64(daily), Timezone: c.Timezone}
		switch i % 10 {
		case 3:
			b.DailyMicros = int64(perSec * 60) // caps within about a minute
		case 7:
			b.LifetimeMicros = int64(perSec * 150) // reaches its lifetime budget in minutes
		}
		if i == n-1 {
			b = nil // no budget row: reported as no_budget, never capped
		}
		c.Budget = b
	}
	return cs, nil
}

func newLoadGen(cs []campaign, qps float64, day time.Duration, topics contract.Topics, in *pipeline.Ingester,
	sel *selector.Selector, ret *selector.Retriever, seed uint64) *loadGen {
	g := &loadGen{campaigns: cs, qps: qps, day: day, topics: topics, in: in, sel: sel, ret: ret,
		rng: rand.New(rand.NewPCG(seed, 11)), truth: make(map[string]int64), factor: 1,
		lost: map[string]map[string]int64{}, lostRecs: map[string]int64{}}
	g.byID = make(map[string]*campaign, len(cs))
	sum := 0.0
	for i, c := range cs {
		sum += c.Weight
		g.cum = append(g.cum, sum)
		g.byID[c.ID] = &g.campaigns[i]
	}
	return g
}

// writeBudgets writes every campaign's budget row to both clusters.
func (g *loadGen) writeBudgets() {
	for _, c := range g.campaigns {
		if c.Budget == nil {
			continue
		}
		b, _ := json.Marshal(c.Budget)
		g.in.Write(g.topics.Budgets, []byte(c.ID), b, nil, time.Now())
	}
}

// curve is the day-shaped traffic multiplier at t: a trough at night, a
// peak at midday, one simulated day per g.day; the sandbox starts in the
// morning. Its mean over a day is 1.
func (g *loadGen) curve(t time.Time) float64 {
	phase := t.Sub(g.start).Seconds()/g.day.Seconds() + 0.3
	return 1 - 0.6*math.Cos(2*math.Pi*phase)
}

// run generates requests until ctx ends, in 20 ms steps.
func (g *loadGen) run(ctx context.Context) {
	g.start = time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	carry := 0.0
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			carry += g.qps * g.curve(now) * g.trafficFactor() * now.Sub(last).Seconds()
			last = now
			n := int(carry)
			carry -= float64(n)
			for range n {
				g.request(now)
			}
		}
	}
}

func (g *loadGen) pick() string {
	x := g.rng.Float64() * g.cum[len(g.cum)-1]
	for i, c := range g.cum {
		if x < c {
			return g.campaigns[i].ID
		}
	}
	return g.campaigns[len(g.campaigns)-1].ID
}

// request simulates one ad request of an ads server.
func (g *loadGen) request(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		return
	}
	cands := make([]string, 0, candidatesPerRequest)
	for range candidatesPerRequest {
		cands = append(cands, g.pick())
	}
	// The ads server tags the request with its snapshot; the retriever
	// answers from the sides the tag names.
	res := g.ret.Retrieve(g.sel.Snapshot().TagString(), cands)
	g.stats.Requests++
	g.stats.Capped += int64(len(res.Capped))
	g.stats.Fallbacks += int64(res.Fallbacks)
	if res.OwnSnapshot {
		g.stats.OwnTag++
	}
	for _, c := range res.Serve {
		if g.rng.Float64() >= c.Rate {
			g.stats.Throttled++
			continue
		}
		g.stats.Served++
		g.emit(now, c)
	}
}

func (g *loadGen) emit(now time.Time, c selector.Candidate) {
	cp := g.byID[c.Campaign]
	typ, price := contract.EventImpression, float64(cp.PriceMicros)
	if g.rng.Float64() < 0.1 {
		typ, price = contract.EventClick, 5*price
	}
	g.seq++
	ev := contract.AdEvent{V: 1, ID: fmt.Sprintf("sbx-%d", g.seq), Type: typ, Campaign: cp.ID,
		Advertiser: cp.Advertiser, PriceMicros: int64(math.Round(price * c.Multiplier)), TS: now.UTC()}
	b, _ := json.Marshal(ev)
	g.in.Write(g.topics.AdEvents, []byte(ev.Campaign), b, nil, now)
	g.truth[ev.Campaign] += ev.PriceMicros
	g.stats.Events++
	g.stats.Micros += ev.PriceMicros
}

// onLost records an ad event a side's ingest lost (called by the Ingester).
func (g *loadGen) onLost(side string, r *kgo.Record, _ error) {
	if r.Topic != g.topics.AdEvents {
		return
	}
	ev, err := contract.DecodeAdEvent(r.Value)
	if err != nil {
		return
	}
	g.lostMu.Lock()
	defer g.lostMu.Unlock()
	if g.lost[side] == nil {
		g.lost[side] = make(map[string]int64)
	}
	g.lost[side][ev.Campaign] += ev.PriceMicros
	g.lostRecs[side]++
}

// setTraffic multiplies the request rate by f (1: as usual).
func (g *loadGen) setTraffic(f float64) {
	g.mu.Lock()
	g.factor = f
	g.mu.Unlock()
}

func (g *loadGen) trafficFactor() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.factor
}

func (g *loadGen) setPaused(p bool) {
	g.mu.Lock()
	g.paused = p
	g.mu.Unlock()
}

// groundTruth returns what was written per campaign and what each side lost.
func (g *loadGen) groundTruth() (truth map[string]int64, lost map[string]map[string]int64, lostRecs map[string]int64) {
	g.mu.Lock()
	truth = make(map[string]int64, len(g.truth))
	for k, v := range g.truth {
		truth[k] = v
	}
	g.mu.Unlock()
	g.lostMu.Lock()
	defer g.lostMu.Unlock()
	lost = make(map[string]map[string]int64)
	for s, m := range g.lost {
		lost[s] = make(map[string]int64)
		for k, v := range m {
			lost[s][k] = v
		}
	}
	lostRecs = make(map[string]int64)
	for s, n := range g.lostRecs {
		lostRecs[s] = n
	}
	return truth, lost, lostRecs
}

func (g *loadGen) snapshot() LoadStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}
