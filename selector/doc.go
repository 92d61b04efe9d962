// Package selector is the read side of hotpair (DESIGN §1, §5).
//
// A Selector watches /selection/<service> in ZooKeeper and keeps the last good
// decision of every service in an immutable Snapshot behind an atomic pointer:
// Active costs one pointer load and an array index, never blocks on ZooKeeper,
// and keeps answering the last good snapshot while ZooKeeper is away (fail
// static). A Tag carries a whole snapshot (every service's side and epoch) from
// the ads server to the retriever in one short header value.
//
// Views keeps materialised, continuously updated copies of the budget-status,
// pacing and bid-multipliers tables of both clusters, one franz-go consumer
// per cluster, so that a dead cluster never slows the other. A Retriever
// answers a request's candidate campaigns from the side its tag names per
// service, filters out capped campaigns, and says where it fell back to the
// other side.
//
// Server is `hotpair selectord`: the same snapshot over HTTP for clients that
// cannot speak ZooKeeper.
package selector
