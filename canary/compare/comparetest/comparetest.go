// Package comparetest feeds the dark comparator in tests: three kfake
// clusters (primary, standby, one dark target) with the compared topics,
// and constructed output records written to them.
package comparetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// Pipelines are the three clusters: live primary and standby, and the dark
// target's, whose topics carry the prefix dark.<Target>.
type Pipelines struct {
	Target string
	// Primary, Standby and Dark are the clusters Start started (nil after
	// StartOn).
	Primary, Standby, Dark *kfake.Cluster
	// on are the clusters written to, primary, standby and dark, with
	// their security settings.
	on [3]kafka.Cluster
}

// Start starts the clusters with every compared topic and budgets (3
// partitions).
func Start(t testing.TB, target string) *Pipelines {
	t.Helper()
	p := &Pipelines{Target: target, Primary: kafkatest.Cluster(t), Standby: kafkatest.Cluster(t), Dark: kafkatest.Cluster(t)}
	p.on = [3]kafka.Cluster{{Brokers: p.Primary.ListenAddrs()}, {Brokers: p.Standby.ListenAddrs()}, {Brokers: p.Dark.ListenAddrs()}}
	p.createTopics(t)
	return p
}

// Cluster is a cluster the test started: its brokers and, on a cluster
// with TLS, SASL and authorization, the settings of a user that may create
// and write the compared topics (a superuser).
type Cluster struct {
	Brokers []string
	Auth    *contract.KafkaAuth
}

// StartOn is Start on clusters the test started.
func StartOn(t testing.TB, target string, primary, standby, dark Cluster) *Pipelines {
	t.Helper()
	p := &Pipelines{Target: target}
	for i, c := range []Cluster{primary, standby, dark} {
		p.on[i] = kafka.Cluster{Brokers: c.Brokers, Auth: c.Auth}
	}
	p.createTopics(t)
	return p
}

// createTopics creates every compared topic and budgets on the three
// clusters.
func (p *Pipelines) createTopics(t testing.TB) {
	t.Helper()
	for i, prefix := range []string{"", "", contract.DarkPrefix(p.Target)} {
		tp := contract.TopicsWithPrefix(prefix)
		specs := []kafka.TopicSpec{{Name: tp.BudgetStatus, Compacted: true}, {Name: tp.Pacing, Compacted: true},
			{Name: tp.BidMultipliers, Compacted: true}, {Name: tp.Health}, {Name: tp.Budgets, Compacted: true}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := kafka.EnsureTopics(ctx, p.on[i], 3, 1, specs...)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// client is a producer of cluster i (0 primary, 1 standby, 2 dark).
func (p *Pipelines) client(t testing.TB, i int) *kgo.Client {
	t.Helper()
	return kafkatest.ClientOf(t, p.on[i], kgo.ProducerLinger(time.Millisecond))
}

// Row is one campaign's outputs.
type Row struct {
	// Skip: the pipeline writes nothing for the campaign.
	Skip   bool
	Status string
	// Day is the budget day ("": the date written).
	Day   string
	Spent int64
	// Lifetime is the spend over the campaign's life (0: Spent).
	Lifetime int64
	Rate     float64
	Mult     float64
	// Window is the newest spend window the values follow from
	// (last_window_start; zero: they do not say).
	Window time.Time
}

// Output is one encoded output record: its output's name and value.
type Output struct {
	Output string // budget-status, pacing or bid-multipliers
	Value  []byte
}

// Outputs encodes the row as campaign's three output records, written at at.
func (r Row) Outputs(t testing.TB, campaign string, at time.Time) []Output {
	t.Helper()
	var out []Output
	day, lifetime := r.Day, r.Lifetime
	if day == "" {
		day = at.Format("2006-01-02")
	}
	if lifetime == 0 {
		lifetime = r.Spent
	}
	for _, o := range []struct {
		name string
		v    any
	}{
		{"budget-status", contract.BudgetStatus{V: 1, Campaign: campaign, Status: r.Status, Day: day,
			SpentTodayMicros: r.Spent, SpentLifetimeMicros: lifetime, LastWindowStart: r.Window, UpdatedAt: at}},
		{"pacing", contract.Pacing{V: 1, Campaign: campaign, Rate: r.Rate, LastWindowStart: r.Window, UpdatedAt: at}},
		{"bid-multipliers", contract.BidMultiplier{V: 1, Campaign: campaign, Multiplier: r.Mult, LastWindowStart: r.Window, UpdatedAt: at}},
	} {
		b, err := contract.Encode(o.v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Output{o.name, b})
	}
	return out
}

// Good is the row every pipeline writes unless a test changes it.
func Good() Row { return Row{Status: "active", Spent: 5000, Rate: 0.5, Mult: 1} }

// Write writes n campaigns' outputs (campaign ids c-000…) to all three
// pipelines, all written at the same moment; change, when set, gives each
// pipeline's row ("primary", "standby" or "dark").
func (p *Pipelines) Write(t testing.TB, n int, change func(pipeline string, i int, r Row) Row) {
	t.Helper()
	at := time.Now().UTC()
	for i, c := range []struct {
		name   string
		prefix string
	}{{"primary", ""}, {"standby", ""}, {"dark", contract.DarkPrefix(p.Target)}} {
		tp := contract.TopicsWithPrefix(c.prefix)
		cl := p.client(t, i)
		var recs []*kgo.Record
		for i := range n {
			r := Good()
			if change != nil {
				r = change(c.name, i, r)
			}
			camp := fmt.Sprintf("c-%03d", i)
			if r.Skip {
				continue
			}
			for _, o := range r.Outputs(t, camp, at) {
				topic := map[string]string{"budget-status": tp.BudgetStatus, "pacing": tp.Pacing, "bid-multipliers": tp.BidMultipliers}[o.Output]
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(camp), Value: o.Value})
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Sample writes the budget rows of n campaigns (c-000…) to the dark
// target's budgets topic, as the dispatcher sends a sampled campaign's.
func (p *Pipelines) Sample(t testing.TB, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		camp := fmt.Sprintf("c-%03d", i)
		b, err := contract.Encode(contract.Budget{V: 1, Campaign: camp, Advertiser: "adv", DailyMicros: 1_000_000_000, Timezone: "UTC"})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: contract.TopicsWithPrefix(contract.DarkPrefix(p.Target)).Budgets, Key: []byte(camp), Value: b})
	}
	cl := p.client(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// Cost is what an instance uses per health window.
type Cost struct {
	Events int64
	CPU    float64 // seconds
	RSSMiB int64
	LagMs  int64
}

// WriteHealth writes, to each pipeline's health topic, windows health
// windows of the aggregator of instances instances with cost (dark gets
// darkCost), the CPU varying by ±2% between windows.
func (p *Pipelines) WriteHealth(t testing.TB, windows, instances int, cost, darkCost Cost) {
	t.Helper()
	start := time.Now().Add(-time.Duration(windows) * 5 * time.Second).UTC()
	for i, c := range []struct {
		side   contract.Side
		role   contract.Role
		prefix string
		cost   Cost
	}{{contract.Primary, contract.RoleLive, "", cost}, {contract.Standby, contract.RoleLive, "", cost},
		{contract.Primary, contract.RoleDark, contract.DarkPrefix(p.Target), darkCost}} {
		var recs []*kgo.Record
		for w := range windows {
			for i := range instances {
				s := contract.HealthSample{V: 1, Service: contract.StageAggregator, Side: c.side, Role: c.role,
					Instance: fmt.Sprintf("i-%d", i), Partitions: []int32{0}, TopicPartitions: 3,
					WindowStart: start.Add(time.Duration(w) * 5 * time.Second), WindowEnd: start.Add(time.Duration(w+1) * 5 * time.Second),
					Events: c.cost.Events, LagMsMax: c.cost.LagMs,
					Resources: &contract.InstanceResources{CPUSeconds: c.cost.CPU * (1 + float64(w%3-1)*0.02), RSSBytes: c.cost.RSSMiB << 20}}
				for range c.cost.Events {
					s.LagMs.Observe(c.cost.LagMs)
				}
				b, err := contract.Encode(s)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, &kgo.Record{Topic: contract.TopicsWithPrefix(c.prefix).Health, Key: []byte(s.Key()), Value: b})
			}
		}
		cl := p.client(t, i)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}
