package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/kafkatest"
	"github.com/hotpair/hotpair/internal/testbin"
	"github.com/hotpair/hotpair/sandbox"
)

// kafkaOf is a sandbox cluster as its address file says to reach it: over
// TLS with its CA, with its SASL user.
func kafkaOf(t *testing.T, a sandbox.Addresses, brokers []string) kafka.Cluster {
	t.Helper()
	sec := contract.KafkaSecurity{TLS: contract.KafkaTLS{Enabled: true, CAFile: a.KafkaCAFile},
		SASL: contract.KafkaSASL{Mechanism: a.KafkaSASLMechanism, Username: a.KafkaSASLUsername, PasswordEnv: "PW"}}
	auth, err := sec.Load("", func(string) string { return a.KafkaSASLPassword })
	if err != nil {
		t.Fatalf("the address file's Kafka security: %v", err)
	}
	return kafka.Cluster{Brokers: brokers, Auth: auth}
}

// kafkaArgs are the --kafka-* flags that connect a hotpair command to the
// sandbox's clusters, the password in a file as an operator would keep it.
func kafkaArgs(t *testing.T, a sandbox.Addresses) []string {
	t.Helper()
	pw := filepath.Join(t.TempDir(), "kafka-password")
	if err := os.WriteFile(pw, []byte(a.KafkaSASLPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--kafka-tls-ca-file", a.KafkaCAFile, "--kafka-sasl-mechanism", a.KafkaSASLMechanism,
		"--kafka-sasl-username", a.KafkaSASLUsername, "--kafka-sasl-password-file", pw}
}

// An operator points kcat at the secure sandbox with the values of its
// address file: the metadata lists the pipeline topics, a record produced
// is consumed back; without TLS, without SASL or with a wrong password,
// the brokers refuse kcat. (The sandbox package's tests start one with
// --insecure: plaintext, no SASL, no ACLs.)
func TestKcatAgainstTheSecureSandbox(t *testing.T) {
	t.Parallel() // see TestFaultMatrix
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed: scripts/install-deps.sh installs Debian's kcat")
	}
	bin := testbin.Hotpair(t)
	sb := startSandbox(t, bin)
	a := sb.addr
	if a.KafkaSecurityProtocol != "SASL_SSL" || a.KafkaCAFile == "" || a.KafkaSASLPassword == "" {
		t.Fatalf("the address file lacks the Kafka security: %+v", a)
	}
	secure := []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + a.KafkaSASLMechanism,
		"-X", "sasl.username=" + a.KafkaSASLUsername, "-X", "sasl.password=" + a.KafkaSASLPassword,
		"-X", "ssl.ca.location=" + a.KafkaCAFile, "-b", a.PrimaryBrokers[0]}
	kc := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(kcat, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	meta, err := kc("", append(secure, "-L", "-m", "10")...)
	if err != nil || !strings.Contains(meta, `topic "ad-events"`) || !strings.Contains(meta, `topic "budget-status"`) {
		t.Fatalf("kcat -L with the credentials: %v\n%s", err, meta)
	}
	topic := "kcat-check"
	if err := kafka.EnsureTopics(t.Context(), kafkaOf(t, a, a.PrimaryBrokers), 1, 1, kafka.TopicSpec{Name: topic}); err != nil {
		t.Fatal(err)
	}
	if out, err := kc("campaign-1:hello over SASL_SSL\n", append(secure, "-t", topic, "-P", "-K:")...); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	out, err := kc("", append(secure, "-t", topic, "-C", "-o", "beginning", "-c", "1", "-e", "-f", "%k=%s\n", "-m", "10")...)
	if err != nil || strings.TrimSpace(out) != "campaign-1=hello over SASL_SSL" {
		t.Fatalf("kcat -C read %q (%v)", out, err)
	}
	// The Go client of the layer reads kcat's record back, with the same values.
	got := kafkatest.ReadAllOf(t, kafkaOf(t, a, a.PrimaryBrokers), topic, 1, 10*time.Second)
	if len(got) != 1 || string(got[0].Value) != "hello over SASL_SSL" {
		t.Fatalf("read %v", got)
	}

	for name, args := range map[string][]string{
		"no TLS, no SASL": {"-b", a.StandbyBrokers[0]},
		"TLS, no SASL":    {"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + a.KafkaCAFile, "-b", a.StandbyBrokers[0]},
		"wrong password": {"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + a.KafkaSASLMechanism,
			"-X", "sasl.username=" + a.KafkaSASLUsername, "-X", "sasl.password=not-it",
			"-X", "ssl.ca.location=" + a.KafkaCAFile, "-b", a.StandbyBrokers[0]},
		"untrusted certificate": {"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + a.KafkaSASLMechanism,
			"-X", "sasl.username=" + a.KafkaSASLUsername, "-X", "sasl.password=" + a.KafkaSASLPassword, "-b", a.StandbyBrokers[0]},
	} {
		out, err := kc("", append(args, "-L", "-m", "3")...)
		if err == nil || strings.Contains(out, `topic "ad-events"`) {
			t.Errorf("%s: kcat was not refused (%v):\n%s", name, err, out)
		}
	}
	sb.interrupt(t)
}
