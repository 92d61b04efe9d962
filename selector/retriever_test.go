package selector

import (
	"slices"
	"sync"
	"testing"

	"github.com/hotpair/hotpair/contract"
	"github.com/prometheus/client_golang/prometheus"
)

// offlineViews returns views that are never run; tests fill them with load.
func offlineViews(t testing.TB, opts ...ViewsOption) *Views {
	t.Helper()
	v, err := NewViews(append([]ViewsOption{WithCluster(contract.Primary, "127.0.0.1:1"), WithCluster(contract.Standby, "127.0.0.1:2")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// load applies one record to side's view as its consumer would.
func load(t testing.TB, v *Views, side contract.Side, svc contract.Service, campaign string, value any) {
	t.Helper()
	b, err := contract.Encode(value)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.sides[side].apply(svc, []byte(campaign), b); r != "" {
		t.Fatalf("apply: %s", r)
	}
}

func loadCampaign(t testing.TB, v *Views, side contract.Side, campaign, status string, rate, mult float64) {
	t.Helper()
	if status != "" {
		load(t, v, side, contract.ServiceBudget, campaign, contract.BudgetStatus{V: 1, Campaign: campaign, Status: status, Day: "2026-03-14", UpdatedAt: testNow})
	}
	if rate >= 0 {
		load(t, v, side, contract.ServicePacer, campaign, contract.Pacing{V: 1, Campaign: campaign, Rate: rate, UpdatedAt: testNow})
	}
	if mult >= 0 {
		load(t, v, side, contract.ServiceBidder, campaign, contract.BidMultiplier{V: 1, Campaign: campaign, Multiplier: mult, UpdatedAt: testNow})
	}
}

func TestRetrieverFiltersCappedCampaignsAndFollowsTheTag(t *testing.T) {
	v := offlineViews(t)
	// primary and standby disagree, as two pipelines do when one is broken.
	loadCampaign(t, v, contract.Primary, "active", contract.StatusActive, 0.5, 1.5)
	loadCampaign(t, v, contract.Standby, "active", contract.StatusDailyCapped, 0.6, 1.6)
	loadCampaign(t, v, contract.Primary, "nobudget", contract.StatusNoBudget, 0.4, 1.4)
	loadCampaign(t, v, contract.Standby, "nobudget", contract.StatusNoBudget, 0.4, 1.4)
	loadCampaign(t, v, contract.Primary, "daily", contract.StatusDailyCapped, 0, 1)
	loadCampaign(t, v, contract.Standby, "daily", contract.StatusDailyCapped, 0, 1)
	loadCampaign(t, v, contract.Primary, "lifetime", contract.StatusLifetimeCapped, 0, 1)
	loadCampaign(t, v, contract.Standby, "lifetime", contract.StatusActive, 1, 1)
	loadCampaign(t, v, contract.Standby, "standbyonly", contract.StatusActive, 0.2, 2.5)
	loadCampaign(t, v, contract.Primary, "nostatus", "", 0.9, -1) // pacing only

	cases := []struct {
		name      string
		tag       string
		serve     []string
		capped    []string
		own       bool
		fallbacks int
	}{
		{"all primary", "1.p1.p1.p1", []string{"active", "nobudget", "standbyonly", "nostatus"}, []string{"daily", "lifetime"}, false, 3},
		{"budget from standby", "1.s2.p1.p1", []string{"nobudget", "lifetime", "standbyonly", "nostatus"}, []string{"active", "daily"}, false, 2},
		{"all standby", "1.s2.s2.s2", []string{"nobudget", "lifetime", "standbyonly", "nostatus"}, []string{"active", "daily"}, false, 1},
		{"bad tag: own snapshot (standby budget)", "garbage", []string{"nobudget", "lifetime", "standbyonly", "nostatus"}, []string{"active", "daily"}, true, 2},
		{"no tag: own snapshot", "", []string{"nobudget", "lifetime", "standbyonly", "nostatus"}, []string{"active", "daily"}, true, 2},
	}
	own := staticSource{newDefaultSnapshot(contract.Primary).with(contract.ServiceBudget, contract.Standby, &selectionDoc, testNow)}
	reg := prometheus.NewRegistry()
	r, err := NewRetriever(v, own, WithRegisterer(reg), WithDefaultMultiplier(0.8))
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"active", "nobudget", "daily", "lifetime", "standbyonly", "nostatus"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.Retrieve(c.tag, all)
			if got := ids(res.Serve); !slices.Equal(got, c.serve) {
				t.Errorf("serve = %v, want %v", got, c.serve)
			}
			if got := ids(res.Capped); !slices.Equal(got, c.capped) {
				t.Errorf("capped = %v, want %v", got, c.capped)
			}
			if res.OwnSnapshot != c.own || res.Fallbacks != c.fallbacks {
				t.Errorf("own = %v, fallbacks = %d; want %v, %d", res.OwnSnapshot, res.Fallbacks, c.own, c.fallbacks)
			}
		})
	}

	res := r.Retrieve("1.p1.s1.p1", []string{"active", "standbyonly", "nostatus", "unknown"})
	want := []Candidate{
		{Campaign: "active", Status: StateActive, Rate: 0.6, Multiplier: 1.5, Found: allServices},
		{Campaign: "standbyonly", Status: StateActive, Rate: 0.2, Multiplier: 2.5, Found: allServices,
			Fallback: ServiceSet(0).Add(contract.ServiceBudget).Add(contract.ServiceBidder)},
		{Campaign: "nostatus", Rate: 0.9, Multiplier: 0.8, Found: ServiceSet(0).Add(contract.ServicePacer), Fallback: ServiceSet(0).Add(contract.ServicePacer)},
		{Campaign: "unknown", Rate: 1, Multiplier: 0.8},
	}
	if !slices.Equal(res.Serve, want) {
		t.Errorf("Serve =\n%+v\nwant\n%+v", res.Serve, want)
	}
	if got := metricValue(t, reg, "hotpair_retriever_tag_fallbacks_total", "reason", "malformed"); got != 1 {
		t.Errorf("tag fallbacks{malformed} = %v, want 1", got)
	}
	if got := metricValue(t, reg, "hotpair_retriever_tag_fallbacks_total", "reason", "missing"); got != 1 {
		t.Errorf("tag fallbacks{missing} = %v, want 1", got)
	}
	if got := r.RetrieveTag(Tag{}, []string{"active"}); !got.OwnSnapshot || got.Tag != own.s.Tag() {
		t.Errorf("RetrieveTag(zero tag) = %+v, want the own snapshot", got)
	}
}

var allServices = ServiceSet(0).Add(contract.ServiceBudget).Add(contract.ServicePacer).Add(contract.ServiceBidder)

var selectionDoc = selection(contract.ServiceBudget, contract.Standby, 9)

func ids(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Campaign)
	}
	return out
}

func TestNewRetrieverValidates(t *testing.T) {
	v := offlineViews(t)
	own := staticSource{newDefaultSnapshot(contract.Primary)}
	for name, opts := range map[string][]RetrieverOption{
		"rate above 1":        {WithDefaultRate(1.5)},
		"negative multiplier": {WithDefaultMultiplier(-1)},
	} {
		if _, err := NewRetriever(v, own, opts...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewRetriever(nil, own); err == nil {
		t.Error("nil views: no error")
	}
}

func TestViewsConcurrentReadersSeeWholeEntries(t *testing.T) {
	// One writer per side and many readers, as in production; -race checks
	// the synchronisation, the reader checks it never sees half an update.
	v := offlineViews(t)
	const n = 3000
	var wg sync.WaitGroup
	for _, side := range []contract.Side{contract.Primary, contract.Standby} {
		wg.Go(func() {
			for i := range n {
				id := campaignID(i % 500)
				r := float64(i%2) * 0.5
				v.sides[side].tab.update(v.keys.intern([]byte(id)), func(e entry) entry {
					e.rate, e.multiplier = r, 2*r
					e.has = e.has.Add(contract.ServicePacer).Add(contract.ServiceBidder)
					return e
				})
			}
		})
	}
	bad := make(chan string, 1)
	for range 4 {
		wg.Go(func() {
			for i := range n {
				id := campaignID(i % 500)
				i, ok := v.keys.lookup(id)
				if !ok {
					continue
				}
				if e, ok := v.sides[contract.Standby].tab.get(i); ok && e.multiplier != 2*e.rate {
					select {
					case bad <- id:
					default:
					}
				}
			}
		})
	}
	wg.Wait()
	select {
	case id := <-bad:
		t.Fatalf("a reader saw a torn entry for %s", id)
	default:
	}
	if v.Campaigns() != 500 {
		t.Fatalf("Campaigns() = %d, want 500", v.Campaigns())
	}
}

func campaignID(i int) string { return "campaign-" + itoa(i) }

func TestNewViewsValidates(t *testing.T) {
	if _, err := NewViews(WithCluster(contract.Primary, "x:1")); err == nil {
		t.Error("views without a standby cluster: no error")
	}
	if _, err := NewViews(WithCluster(contract.Primary, "x:1"), WithCluster(contract.Standby, "y:1"), WithLagInterval(0)); err == nil {
		t.Error("zero lag interval: no error")
	}
}
