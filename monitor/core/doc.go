// Package core is the monitor's pure core: it merges health samples into
// evaluation windows, judges each (service, side) with named rules, and runs
// the per-service decision state machine that picks the active side. It does
// no I/O, starts no goroutines and never reads the clock: time comes in as an
// explicit now.
//
// The driver (package monitor) owns the loop, in this order:
//
//  1. every sample read from hotpair-health of either cluster goes to
//     Engine.Observe with the time it was received;
//  2. at the end of every evaluation window (Config.Window), Engine.Tick(now,
//     overrides) closes the window and returns the verdicts and one Decision
//     per service;
//  3. for every Decision the leader writes Decision.Selection to ZooKeeper
//     (fenced) BEFORE it reports or logs the switch; followers do not write;
//  4. when an operator override appears or disappears between windows,
//     Engine.Redecide(now, overrides) applies it at once without closing a
//     window;
//  5. a monitor that becomes leader reads every /selection/<service> and
//     calls Engine.Restore so the hysteresis (healthy-since times, epoch,
//     last switch) continues instead of starting over.
//
// Aggregation never feeds on its own output: Observe takes only samples,
// Tick returns verdicts and decisions in types Observe cannot take, and the
// driver publishes them to ZooKeeper, never to hotpair-health. Engine.Steps
// counts the samples that went through the aggregation, one step each.
//
// Simulate replays a recorded history through exactly this loop.
package core
