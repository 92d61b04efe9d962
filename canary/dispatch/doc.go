// Package dispatch is the dark canary's dispatcher: it consumes one live
// side's input (ad-events and the budgets table) with a consumer group of
// its own and writes a copy to every active dark target under the target's
// prefix (dark.<name>.), sampled by campaign hash (contract.DarkCopies) so a
// sampled campaign's every event and its budget row go dark, and clones
// above multiplier 1 carry derived campaign ids (contract.DarkCloneID).
//
// The targets are the /hotpair/dark/<name> documents in ZooKeeper, followed
// with watches; a relative target's fraction follows the live and dark
// instance counts of the registry. A target whose document or counts cannot
// be read gets nothing, and says so in hotpair_dark_dispatch_paused.
//
// The dispatcher never slows the live side: it is a separate consumer of
// the live cluster, and every target has its own producer with a bounded
// buffer that drops (and counts) what a dead or slow target cannot take.
// docs/dark.md ("Dispatcher") has the rate formula, the strategies and the
// metrics.
package dispatch
