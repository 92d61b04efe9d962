package pipeline

import "github.com/hotpair/hotpair/contract"

// KafkaACLs is what the pipeline's Kafka principal needs on its side's
// cluster when the cluster checks ACLs, sorted: for each stage it runs,
// Read on its inputs and Write on its outputs, the dead-letter and the
// health topics; Read on its consumer group; Read, Write and
// DescribeConfigs on its goka table and loop topics (goka checks their
// settings at start); and with CreateTopics, Create on every topic it
// creates. The names are literal (the topic prefix and a dark pipeline's
// prefix included): nothing beyond the pipeline's own topics.
//
// Kafka grants Describe (metadata, end offsets) with Read and Write. The
// producers are idempotent: Kafka 3.0 and later allow that to a principal
// with Write on any topic; older brokers also need IdempotentWrite on the
// cluster. Ingest, the monitor, the read side's views and the dark
// dispatcher have lists of their own (docs/security.md).
func (p *Pipeline) KafkaACLs() []contract.KafkaACL {
	t := p.topics
	acls := contract.TopicACLs([]string{t.DLQ, t.Health}, contract.OpWrite)
	var created []string
	for _, st := range p.stages {
		var in []string
		switch st.name {
		case contract.StageAggregator:
			in = []string{t.AdEvents}
		default:
			in = []string{t.Spend, t.Budgets}
		}
		acls = append(acls, contract.TopicACLs(in, contract.OpRead)...)
		acls = append(acls, contract.TopicACLs([]string{t.Output(st.name)}, contract.OpWrite)...)
		acls = append(acls, contract.GroupACLs(string(st.group), contract.OpRead)...)
		own := []string{st.tableTopic(), st.loopTopic()}
		acls = append(acls, contract.TopicACLs(own, contract.OpRead, contract.OpWrite, contract.OpDescribeConfigs)...)
		created = append(created, own...)
	}
	if p.opts.CreateTopics {
		acls = append(acls, contract.TopicACLs(append(t.All(), created...), contract.OpCreate)...)
	}
	return contract.SortACLs(acls)
}

// KafkaACLs is what the ingester's Kafka principal needs on each cluster
// it writes (`hotpair ingest`, or the ads servers' own dual-write): Write
// on the input topics, ad-events and budgets, with the topic prefix. Kafka
// grants Describe with Write; the ingester reads nothing and creates no
// topic (a record to a topic not created yet waits for it, up to the
// delivery timeout). Without them its records are lost for that side,
// counted as not_authorized in hotpair_ingest_lost_total.
func (o IngestOptions) KafkaACLs() []contract.KafkaACL {
	t := contract.TopicsWithPrefix(o.TopicPrefix)
	return contract.SortACLs(contract.TopicACLs([]string{t.AdEvents, t.Budgets}, contract.OpWrite))
}
