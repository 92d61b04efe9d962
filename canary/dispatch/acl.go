package dispatch

import (
	"fmt"

	"github.com/hotpair/hotpair/contract"
)

// LiveKafkaACLs are the ACLs the dispatcher's Kafka user needs on the live
// side's cluster, for the config's topic prefix and group (the defaults
// applied): Read on <prefix>ad-events and on the group (consumed with the
// group, offsets committed), Read on <prefix>budgets (read whole, without a
// group). Kafka grants Describe (metadata, offsets, finding the group's
// coordinator) with Read. The dispatcher writes nothing on the live cluster
// and creates no topic there.
func (c Config) LiveKafkaACLs() []contract.KafkaACL {
	c.defaults()
	t := contract.TopicsWithPrefix(c.TopicPrefix)
	return contract.SortACLs(append(
		contract.TopicACLs([]string{t.AdEvents, t.Budgets}, contract.OpRead),
		contract.GroupACLs(c.Group, contract.OpRead)...))
}

// TargetKafkaACLs are the ACLs the dispatcher's Kafka user needs on a dark
// target's cluster, for the target's topic prefix (always
// contract.DarkPrefix(name)): Write on <prefix>ad-events and
// <prefix>budgets, and Read on <prefix>ad-events, literal names. Kafka
// grants Describe with either. The dispatcher creates no topic (the dark
// pipeline does); it reads back the copies on <prefix>ad-events when it
// resumes live partitions (a restart, a rebalance), so as not to copy
// again what the target has (without Read, those may be copied twice).
//
// Targets are added at run time, by a document in ZooKeeper: grant these
// on the target's cluster when you add a target (before `hotpair dark
// set`), and remove them when you clear it. Without them the target's
// copies are dropped (hotpair_dark_dispatch_dropped_total, reason
// not_authorized). A prefixed grant on "dark." would spare that step but
// let the dispatcher write any dark target's topics, on every cluster that
// has one.
//
// The producers are idempotent (franz-go's default): Kafka 3.0 and later
// accept Write on any topic for the producer id (KIP-679); an older broker
// also needs IdempotentWrite on the cluster, which is not in this list.
func TargetKafkaACLs(prefix string) []contract.KafkaACL {
	t := topicsOf(prefix)
	return contract.SortACLs(append(contract.TopicACLs([]string{t.events, t.budgets}, contract.OpWrite),
		contract.TopicACLs([]string{t.events}, contract.OpRead)...))
}

// KafkaACLs is LiveKafkaACLs for the dispatcher this valid file configures,
// without reading the files its security blocks name.
func (c FileConfig) KafkaACLs() ([]contract.KafkaACL, error) {
	side, err := contract.ParseSide(c.Side)
	if err != nil {
		return nil, fmt.Errorf("%w: side: %v", ErrInvalidConfig, err)
	}
	return Config{Side: side, TopicPrefix: c.Live.TopicPrefix, Group: c.Group}.LiveKafkaACLs(), nil
}
