package monitor

import (
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// KafkaACLs returns the Kafka ACLs one monitor replica needs on each of the
// two clusters when authorization is on, sorted (contract.SortACLs): the
// same list on the primary's and the standby's cluster, for the user of
// clusters.<side>.sasl. Every replica needs all of it (each reads, and any
// may lead and write).
//
//   - <topic_prefix>hotpair-health: Read. Every replica tails every
//     partition from its start time, without a consumer group: no group ACL.
//   - <topic_prefix>hotpair-decisions, the decision record: Read (every
//     replica reads it into its history), Write (the leader appends to it),
//     Create (each replica creates it when missing) and AlterConfigs (it
//     reads the topic's settings and sets retention.ms to record.retention
//     when the topic has another). Create only while the topic is missing
//     (the replica looks it up first): once it exists, the grant
//     may go.
//   - with dark.enabled, the comparator also reads the live outputs:
//     <topic_prefix>budget-status, pacing and bid-multipliers: Read. The dark
//     targets' own clusters (dark_kafka's user) need Read on their topics,
//     prefixed dark.<name>.: compare.TargetKafkaACLs.
//
// All names are literal: the monitor uses no generated names. Implied
// operations are not listed: Kafka grants Describe (metadata, the offset
// lookup by time) with Read or Write, and DescribeConfigs with AlterConfigs.
// The record's producers are idempotent (franz-go's default): Kafka 3.0 and
// later accept Write on any topic for their producer id; older brokers also
// need IdempotentWrite on the cluster, which this list leaves out. So a
// user without Write on the record sees its entries refused with
// CLUSTER_AUTHORIZATION_FAILED (the producer id, asked for first), not a
// topic error: grant Write on the record, not IdempotentWrite.
func (c Config) KafkaACLs() []contract.KafkaACL {
	t := contract.TopicsWithPrefix(c.TopicPrefix)
	acls := contract.TopicACLs([]string{t.Health}, contract.OpRead)
	acls = append(acls, contract.TopicACLs([]string{c.recordTopic()},
		contract.OpRead, contract.OpWrite, contract.OpCreate, contract.OpAlterConfigs)...)
	if c.Dark.Enabled {
		acls = append(acls, contract.TopicACLs([]string{t.BudgetStatus, t.Pacing, t.BidMultipliers}, contract.OpRead)...)
	}
	return contract.SortACLs(acls)
}

// recordTopic is the decision record's topic.
func (c Config) recordTopic() string { return c.TopicPrefix + decisions.Topic }
