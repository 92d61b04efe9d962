package compare

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/canary/compare/comparetest"
	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/metricvalue"
	"github.com/hotpair/hotpair/internal/testbin"
)

func TestKafkaACLs(t *testing.T) {
	acls := func(a ...string) []string { return a }
	prefixed := DefaultConfig()
	prefixed.TopicPrefix = "ads."
	for _, tc := range []struct {
		name string
		got  []contract.KafkaACL
		want []string
	}{
		{"live, default config", DefaultConfig().LiveKafkaACLs(), acls(
			"--topic bid-multipliers --operation Read",
			"--topic budget-status --operation Read",
			"--topic hotpair-health --operation Read",
			"--topic pacing --operation Read")},
		{"live, topic prefix", prefixed.LiveKafkaACLs(), acls(
			"--topic ads.bid-multipliers --operation Read",
			"--topic ads.budget-status --operation Read",
			"--topic ads.hotpair-health --operation Read",
			"--topic ads.pacing --operation Read")},
		{"target", TargetKafkaACLs("cand"), acls(
			"--topic dark.cand.bid-multipliers --operation Read",
			"--topic dark.cand.budget-status --operation Read",
			"--topic dark.cand.budgets --operation Read",
			"--topic dark.cand.hotpair-health --operation Read",
			"--topic dark.cand.pacing --operation Read")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kafkatest.ACLStrings(tc.got); !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// The comparator's user holds exactly LiveKafkaACLs on both live clusters
// and TargetKafkaACLs of the target on its cluster (the target found in
// ZooKeeper, read as dark_kafka's user), all with TLS, SASL and
// authorization on: it compares every output of the target's sampled
// campaigns with live and the health samples of the three pipelines, and
// passes it. Without Read on dark.cand.pacing, pacing has no point and the
// target cannot pass: its report says pacing is short of points, the
// refusals are counted (reason not_authorized) and a warning names the
// topic. Without Read on dark.cand.budgets every output compares equal, but
// no campaign is known as sampled, so none could be found missing: not a
// pass either, and the report says which topic gave no row.
func TestComparatorWithTheDocumentedACLs(t *testing.T) {
	const user, n = "compare", 30
	dt := contract.TopicsWithPrefix(contract.DarkPrefix("cand"))
	pacing, budgets := dt.Pacing, dt.Budgets
	for _, tc := range []struct {
		name string
		drop string // a topic whose Read the user lacks on the target's cluster
	}{{"the documented ACLs", ""}, {"without Read on " + pacing, pacing}, {"without Read on " + budgets, budgets}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Rules, cfg.HTTP.Listen = fastRules(), "off"
			primary, pAs := kafkatest.AuthorizedClusterConfig(t, map[string][]contract.KafkaACL{user: cfg.LiveKafkaACLs()})
			standby, sAs := kafkatest.AuthorizedClusterConfig(t, map[string][]contract.KafkaACL{user: cfg.LiveKafkaACLs()})
			target := slices.DeleteFunc(TargetKafkaACLs("cand"), func(a contract.KafkaACL) bool { return a.Name == tc.drop })
			if tc.drop != "" && len(target) != len(TargetKafkaACLs("cand"))-1 {
				t.Fatalf("%s is not in TargetKafkaACLs once: %v", tc.drop, target)
			}
			dark, dAs := kafkatest.AuthorizedClusterConfig(t, map[string][]contract.KafkaACL{user: target})
			on := func(c kafka.Cluster) comparetest.Cluster {
				return comparetest.Cluster{Brokers: c.Brokers, Auth: c.Auth}
			}
			p := comparetest.StartOn(t, "cand", on(primary), on(standby), on(dark))

			addr, root, conn := zkRoot(t)
			putTarget(t, conn, contract.NewPaths(root), darkDoc("cand", contract.Primary, dark.Brokers))
			cfg.ZK.Servers, cfg.ZK.Root = []string{addr}, root
			cfg.Clusters.Primary, cfg.Clusters.Standby, cfg.DarkKafka = pAs[user], sAs[user], dAs[user].Kafka

			p.Sample(t, n)
			cost := comparetest.Cost{Events: 5000, CPU: 0.5, RSSMiB: 200, LagMs: 20}
			p.WriteHealth(t, 8, 2, cost, cost)
			p.Write(t, n, nil)
			logs := &testbin.Buffer{}
			reg := prometheus.NewRegistry()
			c := runComparator(t, Options{Config: cfg, Registerer: reg,
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			outs := slices.DeleteFunc(slices.Clone(outputs), func(o string) bool { return tc.drop == pacing && o == outdiff.Pacing })
			settleOutputs(t, c, n, outs, nil)
			p.Write(t, n, func(_ string, _ int, r comparetest.Row) comparetest.Row { r.Spent += 1000; return r })
			refusals := func() float64 {
				v, _ := metricvalue.Get(reg, "hotpair_dark_compare_read_errors_total", "pipeline", "dark cand", "reason", "not_authorized")
				return v
			}

			if tc.drop == "" {
				rep := settleOutputs(t, c, 2*n, outs, func(r Report) bool {
					return r.Verdict == Pass && r.Targets[0].Resources.Verdict == Pass
				})
				if tr := rep.Targets[0]; tr.Sampled != n || tr.Campaigns != n {
					t.Errorf("sampled %d, compared %d campaigns: want %d of each", tr.Sampled, tr.Campaigns, n)
				}
				for _, pipeline := range []string{"primary", "standby", "dark cand"} {
					if v := gaugeValue(t, reg, "hotpair_dark_compare_records_total", "pipeline", pipeline); v < 2*3*n {
						t.Errorf("read %v records of %s, want at least %d", v, pipeline, 2*3*n)
					}
				}
				if v := refusals(); v != 0 || logs.String() != "" {
					t.Errorf("%v reads refused with every documented ACL; warnings:\n%s", v, logs)
				}
				return
			}
			rep := settleOutputs(t, c, 2*n, outs, func(Report) bool {
				return refusals() > 0 && strings.Contains(logs.String(), "topic="+tc.drop)
			})
			tr := rep.Targets[0]
			if tc.drop == budgets {
				if tr.Verdict != InsufficientData || tr.Sampled != 0 {
					t.Fatalf("verdict %s with %d sampled campaigns, want insufficient data with none: %v", tr.Verdict, tr.Sampled, tr.Reasons)
				}
				if want := "no sampled campaign known: " + budgets + " gave no row"; !strings.Contains(strings.Join(tr.Reasons, "\n"), want) {
					t.Errorf("reasons %q lack %q", tr.Reasons, want)
				}
				return
			}
			if tr.Verdict != InsufficientData || tr.Points[outdiff.Pacing] != 0 {
				t.Fatalf("verdict %s with %d pacing points, want insufficient data with none: %v", tr.Verdict, tr.Points[outdiff.Pacing], tr.Reasons)
			}
			if want := "pacing: 0 points compared, need 50"; !slices.Contains(tr.Reasons, want) {
				t.Errorf("reasons %q lack %q", tr.Reasons, want)
			}
			if logs := logs.String(); !strings.Contains(logs, "not authorized to read a topic") || !strings.Contains(logs, `pipeline="dark cand"`) {
				t.Errorf("the warning does not name the refusal:\n%s", logs)
			}
		})
	}
}
