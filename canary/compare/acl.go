package compare

import (
	"github.com/hotpair/hotpair/contract"
)

// LiveKafkaACLs are the ACLs the comparator's Kafka user needs on each live
// cluster, the same list on the primary's and the standby's (the users of
// clusters.primary.sasl and clusters.standby.sasl), for the config's topic
// prefix: Read on <prefix>budget-status, <prefix>pacing and
// <prefix>bid-multipliers (the outputs compared) and on
// <prefix>hotpair-health (the health samples whose resources are compared).
// Both sides are read whatever a target's source: the standby is the noise
// the dark target is measured against.
//
// The readers use no consumer group (each reads every partition from the
// horizon's start, an offset lookup by time): no group ACL. Kafka grants
// Describe (metadata, the offset lookup) with Read. The comparator writes
// nothing and creates no topic. The names are literal.
//
// It reads no file: a config from LoadConfig is enough (`hotpair config
// acls`).
func (c Config) LiveKafkaACLs() []contract.KafkaACL {
	return contract.SortACLs(contract.TopicACLs(readTopics(contract.TopicsWithPrefix(c.TopicPrefix)), contract.OpRead))
}

// TargetKafkaACLs are the ACLs the comparator's Kafka user needs on the
// cluster of the dark target called name (the user of dark_kafka.sasl, or
// of targets[i].sasl for a target the config lists), for the target's topic
// prefix (always contract.DarkPrefix(name)): Read on
// dark.<name>.budget-status, pacing, bid-multipliers and hotpair-health,
// as on a live cluster, and on dark.<name>.budgets, the campaigns the
// dispatcher sent the target (read whole, without a group). Kafka grants
// Describe with Read. The comparator writes nothing there.
//
// Targets are added at run time, by a document in ZooKeeper: grant these
// on the target's cluster when you add a target (with the dispatcher's,
// before `hotpair dark set`), and remove them when you clear it. Without
// one, the reads of its topic are refused: the target's report is short of
// points (insufficient data, never a pass), and
// hotpair_dark_compare_read_errors_total{pipeline="dark NAME",
// reason="not_authorized"} counts the refusals, with a warning log naming
// the topic. Without Read on budgets the target has no sampled campaigns
// (the report's sampled is 0), so campaigns the target fails to write could
// not be found missing: its verdict is insufficient data, naming the topic,
// however equal its outputs. A prefixed grant on "dark." would spare that step but
// let the comparator read every dark target's topics on every cluster that
// has one.
func TargetKafkaACLs(name string) []contract.KafkaACL {
	t := contract.TopicsWithPrefix(contract.DarkPrefix(name))
	return contract.SortACLs(contract.TopicACLs(append(readTopics(t), t.Budgets), contract.OpRead))
}

// readTopics are the topics read of every pipeline, live or dark: its
// outputs and its health samples (Comparator.read).
func readTopics(t contract.Topics) []string {
	return []string{t.BudgetStatus, t.Pacing, t.BidMultipliers, t.Health}
}
