// Package compare is the dark canary's comparator: it reads the service
// outputs (budget-status, pacing, bid-multipliers) and the health samples
// of the primary side, the standby side and every dark target, and judges
// each dark target against live:
//
//   - outputs, per sampled campaign and field: how often and by how much the
//     dark target differs from its source side (raw), against how often the
//     primary differs from the standby (noise, Diffy's idea: the old code run
//     twice). Fields are compared by canary/outdiff, the comparison
//     `hotpair replay verify` uses.
//   - resources, per instance and health window: input events/s (the rate
//     check), CPU per 1k events, resident memory, event-lag p99 and the
//     dead-letter rate, dark instances against live ones, with a
//     Mann-Whitney U test against the spread between primary and standby.
//
// The judgement is a pure Engine (Observe…, Round(now), Report(now)); the
// Comparator is its shell: Kafka readers, the dark targets from ZooKeeper or
// the config, metrics, the HTTP API and page section. docs/dark.md
// ("Comparison") explains the maths and the defaults.
package compare
