package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
)

// A pipeline whose cluster refuses its password stops at start with an
// error naming the broker and the mechanism, instead of retrying forever.
func TestPipelineWithAWrongPasswordStopsAtStart(t *testing.T) {
	kc, sec := kafkatest.SecureCluster(t)
	auth := sec.Auth()
	auth.SASL.Password = "wrong"
	o := testOptions(kc.ListenAddrs(), contract.Primary)
	o.KafkaAuth = auth
	err := runToStop(t, o)
	if !errors.Is(err, kafka.ErrAuth) {
		t.Fatalf("Run: %v, want ErrAuth at start", err)
	}
	for _, w := range []string{kc.ListenAddrs()[0], "SCRAM-SHA-256"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
}
