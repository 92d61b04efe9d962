// Package contract is what every hotpair component and any program outside
// this module agree on, and nothing else: the names (sides, stages, services,
// roles, topics), the records on the topics with their strict codecs, the
// health samples' lag histogram, the ZooKeeper layout with its JSON
// documents, and the digest credentials the components use there.
//
// It is a leaf: it imports only the standard library, so the read side
// (package selector, a retriever) and the monitor's pure core can use the
// contract without linking Kafka, goka or ZooKeeper clients. Wire formats
// are fixed: the same values encode to the same bytes on every host and
// across releases (testdata/golden holds them).
package contract
