package monitor

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/changes"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/zktest"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// KafkaACLs names the topics of the config: the prefix, and the live
// outputs the dark comparator reads when it is on.
func TestKafkaACLs(t *testing.T) {
	base := []string{
		"--topic hotpair-decisions --operation AlterConfigs",
		"--topic hotpair-decisions --operation Create",
		"--topic hotpair-decisions --operation Read",
		"--topic hotpair-decisions --operation Write",
		"--topic hotpair-health --operation Read",
	}
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want []string
	}{
		{"default", func(*Config) {}, base},
		{"topic prefix", func(c *Config) { c.TopicPrefix = "ads." }, []string{
			"--topic ads.hotpair-decisions --operation AlterConfigs",
			"--topic ads.hotpair-decisions --operation Create",
			"--topic ads.hotpair-decisions --operation Read",
			"--topic ads.hotpair-decisions --operation Write",
			"--topic ads.hotpair-health --operation Read",
		}},
		{"dark comparator", func(c *Config) { c.Dark.Enabled = true }, append([]string{
			"--topic bid-multipliers --operation Read",
			"--topic budget-status --operation Read"},
			append(slices.Clone(base), "--topic pacing --operation Read")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.set(&c)
			got := kafkatest.ACLStrings(c.KafkaACLs())
			if !slices.Equal(got, tc.want) {
				t.Fatalf("KafkaACLs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// On two clusters with authorization on, a replica whose Kafka user holds
// exactly Config.KafkaACLs works as it does without ACLs: it reads both
// sides' health samples (written by another user) and publishes the
// selection, creates the decision record's topic where it is missing, sets
// its retention where the topic had another, writes its entries to both
// copies and reads them back, and nothing is refused. A replica whose user
// lacks any single one of those ACLs logs the refusal: every entry of the
// list is needed (Create while the record's topic is missing).
func TestMonitorWithKafkaACLs(t *testing.T) {
	addr := zktest.Addr(t)
	need := DefaultConfig().KafkaACLs()
	users := map[string][]contract.KafkaACL{"monitor": need}
	without := func(a contract.KafkaACL) string { return "without-" + a.Operation + "-" + a.Name }
	for i, a := range need {
		users[without(a)] = slices.Delete(slices.Clone(need), i, i+1)
	}
	var cs [2]cluster
	var secs [2]map[string]contract.KafkaCluster
	for i, side := range contract.Sides() {
		admin, as := kafkatest.AuthorizedClusterConfig(t, users)
		cs[i], secs[i] = cluster{side: side, brokers: admin.Brokers, auth: admin.Auth}, as
		if err := kafka.EnsureTopics(t.Context(), admin, 3, 1, kafka.TopicSpec{Name: contract.TopicsWithPrefix("").Health}); err != nil {
			t.Fatal(err)
		}
	}
	p, s := cs[0], cs[1]
	// The standby's copy of the record exists, with another retention.
	if err := kafka.EnsureTopics(t.Context(), kafka.Cluster{Brokers: s.brokers, Auth: s.auth}, 1, 1,
		kafka.TopicSpec{Name: decisions.Topic, Config: kafka.Retention(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	newFleet(t, p)
	newFleet(t, s)
	// replica starts a replica as user, its WARN and ERROR logs in logs.
	replicaAs := func(t *testing.T, user string) (*replica, *logBuffer, contract.Paths) {
		pu, su := p, s
		pu.sec, su.sec = secs[0][user].Kafka, secs[1][user].Kafka
		paths := testRoot(t)
		logs := &logBuffer{}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		return startReplicaLogged(t, testConfig(user, addr, paths, pu, su), log), logs, paths
	}

	// First alone: the record's topics are shared, and a replica of the
	// other cases would create the primary's and correct the standby's.
	t.Run("with KafkaACLs", func(t *testing.T) {
		r, logs, paths := replicaAs(t, "monitor")
		w := watchSelection(t, testConn(t, addr, nil), paths, contract.ServiceBudget)
		waitFor(t, &w.changes, 4*tWindow+5*time.Second, "a selection with both sides healthy", func() bool {
			sel := w.last()
			return sel != nil && sel.Active == contract.Primary && sel.Sides[contract.Primary].Healthy && sel.Sides[contract.Standby].Healthy
		})
		waitFor(t, &r.changes, 4*tWindow, "the replica's entries written to both clusters and read back", func() bool {
			return r.metric(t, "hotpair_monitor_record_writes_total", "side", "primary") > 0 &&
				r.metric(t, "hotpair_monitor_record_writes_total", "side", "standby") > 0 &&
				slices.ContainsFunc(r.hist.recentDecisions(), func(e decisions.Entry) bool { return e.RecordedBy == r.ID() })
		})
		for _, cl := range []cluster{p, s} {
			side := cl.side.String()
			if r.metric(t, "hotpair_monitor_samples_total", "side", side) == 0 {
				t.Errorf("no health sample read from the %s cluster", side)
			}
			es, _, err := decisions.Read(t.Context(), decisions.ReadOptions{Sources: []decisions.Source{{Side: side, Brokers: cl.brokers, KafkaAuth: cl.auth}},
				Filter: decisions.Filter{Service: contract.ServiceBudget, Kinds: []decisions.Kind{decisions.KindSwitch}}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(es, func(e decisions.Entry) bool { return e.RecordedBy == r.ID() && e.Cause == "initial" }) {
				t.Errorf("the %s copy of the record lacks the replica's first decision: %d switches", side, len(es))
			}
		}
		for _, cl := range []cluster{p, s} { // created on the primary, corrected on the standby
			if got := retentionOf(t, cl); got != strconv.FormatInt(DefaultConfig().Record.Retention.Milliseconds(), 10) {
				t.Errorf("retention.ms of the %s's record = %s, want record.retention", cl.side, got)
			}
		}
		if !strings.Contains(logs.String(), "set to the configured one (record.retention)\" replica=monitor side=standby") {
			t.Errorf("the standby's retention was not corrected by the replica:\n%s", logs.String())
		}
		for _, m := range []string{"hotpair_monitor_consumer_errors_total", "hotpair_monitor_record_read_errors_total", "hotpair_monitor_record_write_errors_total"} {
			if v := r.metric(t, m); v != 0 {
				t.Errorf("%s = %v, want 0", m, v)
			}
		}
		if l := logs.String(); strings.Contains(l, "AUTHORIZATION_FAILED") {
			t.Errorf("a request was refused:\n%s", l)
		}
	})
	for _, a := range need {
		create := a.Operation == contract.OpCreate
		t.Run("without "+a.String(), func(t *testing.T) {
			if create {
				// Create is needed only while the topic is missing: the
				// first case created the primary's. Without it again, and
				// before the other cases (which may create it) run.
				resp, err := kadm.NewClient(kafkatest.ClientOf(t, kafka.Cluster{Brokers: p.brokers, Auth: p.auth})).DeleteTopic(t.Context(), decisions.Topic)
				if err == nil {
					err = resp.Err
				}
				if err != nil {
					t.Fatal(err)
				}
			} else {
				t.Parallel()
			}
			_, logs, _ := replicaAs(t, without(a))
			var refused string
			waitFor(t, &logs.changes, 4*tWindow+5*time.Second, "a refusal naming the authorization failure (none: is the ACL needed at all?)", func() bool {
				for l := range strings.Lines(logs.String()) {
					if strings.Contains(l, "AUTHORIZATION_FAILED") {
						refused = l
						return true
					}
				}
				return false
			})
			t.Logf("what the operator sees: %s", refused)
		})
	}
}

// retentionOf returns retention.ms of the record's topic on cl.
func retentionOf(t *testing.T, cl cluster) string {
	t.Helper()
	rcs, err := kadm.NewClient(kafkatest.ClientOf(t, kafka.Cluster{Brokers: cl.brokers, Auth: cl.auth})).DescribeTopicConfigs(t.Context(), decisions.Topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == "retention.ms" {
			return c.MaybeValue()
		}
	}
	return ""
}

// logBuffer keeps what a text logger wrote, and notifies on every line.
type logBuffer struct {
	changes changes.Feed
	mu      sync.Mutex
	b       strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.changes.Notify()
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
