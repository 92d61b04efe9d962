// Package pipeline holds hotpair's streaming half: the aggregator and the
// three services (budget enforcer, pacer, bidder) as goka processors, health
// sampling, dead letters, dual-write ingest and the daemon that runs one
// side's stages. The records, their codecs and the names it shares with the
// read side and the monitor are in package contract.
//
// One Pipeline value runs the stages of one side against one Kafka cluster.
// Two of them, one per cluster, share nothing: no sarama config, no storage
// directory, no client. The read side decides which side's outputs to trust.
package pipeline
