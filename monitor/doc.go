// Package monitor is the hotpair monitor daemon: the imperative shell around
// the pure decision core (package monitor/core). A Monitor is one replica:
//
//   - two health consumers, one per Kafka cluster, feed the core's windows;
//   - an evaluation loop on its own ticker closes a window every
//     Config.Window and decides every service, whatever Kafka or ZooKeeper do;
//   - replicas elect a leader in ZooKeeper (ephemeral sequential nodes under
//     contract.Paths.LeaderDir); followers stay hot and mirror what the leader
//     published, so a new leader continues the hysteresis;
//   - the leader's publisher writes /selection/<service> in one ZooKeeper
//     multi fenced on its own election node (writeSelection), so a deposed
//     leader can never overwrite a newer decision;
//   - once a selection is persisted, the leader appends what changed and the
//     windows' verdicts to the decision record (package monitor/decisions),
//     the topic hotpair-decisions on both clusters, one bounded producer per
//     cluster; every replica reads the record back for its page and
//     /api/v1/history, so all show the same history after any restart;
//   - an override watcher applies operator overrides between windows;
//   - Handler serves the on-call page, /api/v1/status, /api/v1/history,
//     /metrics, /healthz and /readyz.
//
// The operator tools (hotpair status, hotpair override) use ReadStatus,
// WriteStatusText, SetOverride and ClearOverride straight on ZooKeeper.
// docs/monitor.md is the operator's guide.
package monitor
