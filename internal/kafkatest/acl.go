package kafkatest

import (
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafka/devsec"
)

// AuthorizedCluster starts a kfake cluster with TLS, SASL and authorization
// on, as a production cluster with ACLs is: each user of users (name → the
// ACLs it holds, nothing else) connects with SCRAM-SHA-256 as the returned
// cluster of that name says; the "admin" cluster is a superuser's, for the
// test's own setup and reads.
func AuthorizedCluster(t testing.TB, users map[string][]contract.KafkaACL) (admin kafka.Cluster, as map[string]kafka.Cluster) {
	t.Helper()
	admin, as, _ = authorizedCluster(t, users)
	return admin, as
}

// AuthorizedClusterConfig is AuthorizedCluster for daemons configured by
// file: each user's cluster is the config block a daemon's YAML holds
// (brokers, TLS with the CA file, SASL with the user and a password file,
// the files in a temporary directory).
func AuthorizedClusterConfig(t testing.TB, users map[string][]contract.KafkaACL) (admin kafka.Cluster, as map[string]contract.KafkaCluster) {
	t.Helper()
	admin, _, sec := authorizedCluster(t, users)
	dir := t.TempDir()
	ca, pw := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "password")
	if err := sec.WriteCA(ca); err != nil {
		t.Fatal(err)
	}
	if err := sec.WritePassword(pw); err != nil {
		t.Fatal(err)
	}
	as = make(map[string]contract.KafkaCluster, len(users))
	for user := range users {
		s := sec.Security(ca, pw)
		s.SASL.Username = user
		as[user] = contract.KafkaCluster{Brokers: admin.Brokers, Kafka: s}
	}
	return admin, as
}

// authorizedCluster starts the cluster of AuthorizedCluster and returns its
// security setup too (every user has the setup's password).
func authorizedCluster(t testing.TB, users map[string][]contract.KafkaACL) (admin kafka.Cluster, as map[string]kafka.Cluster, sec *devsec.Setup) {
	t.Helper()
	sec, err := devsec.New()
	if err != nil {
		t.Fatal(err)
	}
	opts := append(sec.ClusterOpts(), kfake.EnableACLs())
	for user, acls := range users {
		opts = append(opts, kfake.User(contract.SASLSCRAMSHA256, user, sec.Password, KfakeACLs(t, acls)...))
	}
	c := Cluster(t, opts...)
	admin = kafka.Cluster{Name: "admin", Brokers: c.ListenAddrs(), Auth: sec.Auth()}
	as = make(map[string]kafka.Cluster, len(users))
	for user := range users {
		auth := sec.Auth()
		auth.SASL.User = user
		as[user] = kafka.Cluster{Name: user, Brokers: c.ListenAddrs(), Auth: auth}
	}
	return admin, as, sec
}

// KfakeACLs are acls as kfake seeds them (allowed from any host).
func KfakeACLs(t testing.TB, acls []contract.KafkaACL) []kfake.ACL {
	t.Helper()
	out := make([]kfake.ACL, 0, len(acls))
	for _, a := range acls {
		rt, err := kmsg.ParseACLResourceType(a.Resource)
		if err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		pt, err := kmsg.ParseACLResourcePatternType(a.Pattern)
		if err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		op, err := kmsg.ParseACLOperation(a.Operation)
		if err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		out = append(out, kfake.ACL{Resource: rt, Name: a.Name, Pattern: pt, Operation: op, Allow: true})
	}
	return out
}

// ACLStrings are acls as kafka-acls.sh options (KafkaACL.String), one
// each: what a test of a daemon's list compares with the lines it expects.
func ACLStrings(acls []contract.KafkaACL) []string {
	out := make([]string, len(acls))
	for i, a := range acls {
		out[i] = a.String()
	}
	return out
}
