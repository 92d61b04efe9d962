package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// With SASL and TLS on, a client with the right credentials produces and
// consumes with every mechanism.
func TestRightCredentialsWorkWithEveryMechanism(t *testing.T) {
	kc, sec := kafkatest.SecureCluster(t)
	for _, mech := range contract.SASLMechanisms() {
		t.Run(mech, func(t *testing.T) {
			auth := sec.Auth()
			auth.SASL.Mechanism = mech
			c := kafka.Cluster{Name: "primary", Brokers: kc.ListenAddrs(), Auth: auth}
			topic := "t-" + strings.ToLower(mech)
			if err := kafka.EnsureTopics(t.Context(), c, 2, 1, kafka.TopicSpec{Name: topic}); err != nil {
				t.Fatal(err)
			}
			cl := kafkatest.ClientOf(t, c)
			if err := kafka.CheckAuth(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			got := kafkatest.ReadAllOf(t, c, topic, 1, 10*time.Second)
			if len(got) != 1 || string(got[0].Value) != "v" {
				t.Fatalf("read %d records", len(got))
			}
		})
	}
}

// A wrong password, an untrusted certificate and a client without TLS or
// SASL fail at start, at once, naming the broker and what to fix.
func TestWrongSecurityFailsAtStart(t *testing.T) {
	kc, sec := kafkatest.SecureCluster(t)
	brokers := kc.ListenAddrs()
	wrongPassword := sec.Auth()
	wrongPassword.SASL.Password = "not-it"
	untrusted := sec.Auth()
	untrusted.TLS.RootCAs = nil // the system's roots do not know the sandbox CA
	noTLS := sec.Auth()
	noTLS.TLS = nil
	for _, tc := range []struct {
		name string
		auth *contract.KafkaAuth
		want []string
	}{
		{"wrong password", wrongPassword, []string{brokers[0], "SASL SCRAM-SHA-256", `user "hotpair"`, "failed", "password"}},
		{"untrusted certificate", untrusted, []string{brokers[0], "not trusted", "tls.ca_file"}},
		{"no TLS", noTLS, []string{brokers[0], "tls"}},
		{"nothing", nil, []string{brokers[0], "tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kafka.Cluster{Name: "primary", Brokers: brokers, Auth: tc.auth}
			start := time.Now()
			err := kafka.CheckAuth(context.Background(), c)
			if !errors.Is(err, kafka.ErrAuth) {
				t.Fatalf("CheckAuth: %v, want ErrAuth", err)
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q: %v", w, err)
				}
			}
			if tc.auth != nil && tc.auth.SASL != nil && strings.Contains(err.Error(), tc.auth.SASL.Password) {
				t.Errorf("the error shows the password: %v", err)
			}
			if d := time.Since(start); d > kafka.DefaultCheckTimeout/2 {
				t.Errorf("it took %s to fail", d)
			}
		})
	}
}

// A cluster that is down is no configuration error: the daemon starts.
func TestCheckAuthPassesAClusterThatIsDown(t *testing.T) {
	kc, sec := kafkatest.SecureCluster(t)
	c := kafka.Cluster{Brokers: kc.ListenAddrs(), Auth: sec.Auth()}
	kc.Close()
	if err := kafka.CheckAuth(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}
