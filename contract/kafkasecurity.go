package contract

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// KafkaCluster is one Kafka cluster in a daemon's YAML config: its seed
// brokers and, beside them, its security block (keys tls and sasl).
type KafkaCluster struct {
	Brokers []string      `yaml:"brokers"`
	Kafka   KafkaSecurity `yaml:",inline"`
}

// KafkaSecurity is the one Kafka security block every daemon and tool accepts,
// per cluster: TLS to the brokers and SASL authentication. In YAML it sits
// beside the cluster's brokers:
//
//	brokers: [kafka-a1:9093]
//	tls:
//	  enabled: true
//	  ca_file: /etc/hotpair/kafka/ca.crt      # default: the system's roots
//	  cert_file: /etc/hotpair/kafka/client.crt # client certificate (mTLS), with key_file
//	  key_file: /etc/hotpair/kafka/client.key
//	  server_name: kafka-a.example.com         # default: each broker's host
//	sasl:
//	  mechanism: SCRAM-SHA-512                 # PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
//	  username: hotpair-a
//	  password_file: /etc/hotpair/kafka/password-a  # or password_env: NAME
//
// Secrets are never written in the block itself: the password comes from a
// file or an environment variable, read once at start. Nothing here is
// logged, and no error message contains a secret.
type KafkaSecurity struct {
	TLS  KafkaTLS  `yaml:"tls"`
	SASL KafkaSASL `yaml:"sasl"`
}

// KafkaTLS encrypts the connections to the brokers and checks their
// certificates.
type KafkaTLS struct {
	// Enabled turns TLS on. The other keys need it.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM file of the certificate authorities the brokers'
	// certificates are checked against (default: the system's).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's certificate and key (PEM), for
	// brokers that authenticate clients by certificate.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the brokers' certificates must carry (default:
	// the host of the broker address dialled).
	ServerName string `yaml:"server_name"`
}

// KafkaSASL authenticates the client to the brokers.
type KafkaSASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 ("": no SASL).
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	// PasswordFile is a file holding the password (a trailing newline is
	// ignored); PasswordEnv the name of an environment variable holding it.
	// Exactly one of them is required.
	PasswordFile string `yaml:"password_file"`
	PasswordEnv  string `yaml:"password_env"`
}

// ErrKafkaSecurity is wrapped by every error of a security block that cannot be
// used: a missing or unreadable file, an unknown mechanism, a password that
// is not there.
var ErrKafkaSecurity = errors.New("bad Kafka security config")

// IsZero reports whether the block sets nothing: plaintext without SASL.
func (s KafkaSecurity) IsZero() bool { return s == KafkaSecurity{} }

// Validate checks the block without reading files or the environment; each
// problem names its key under prefix ("" or e.g. "clusters.primary.") and
// the fix.
func (s KafkaSecurity) Validate(prefix string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s%s %s", ErrKafkaSecurity, prefix, key, fmt.Sprintf(format, args...)))
	}
	t := s.TLS
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "") {
		bad("tls.enabled", "is false but other tls keys are set: set tls.enabled: true, or remove them")
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		bad("tls.cert_file", "and tls.key_file go together: set both (a client certificate and its key) or neither")
	}
	a := s.SASL
	switch {
	case a.Mechanism == "" && a != KafkaSASL{}:
		bad("sasl.mechanism", "is required with the other sasl keys: one of %s", strings.Join(SASLMechanisms(), ", "))
	case a.Mechanism == "":
	case !slices.Contains(SASLMechanisms(), a.Mechanism):
		bad("sasl.mechanism", "%q is unknown: use one of %s", a.Mechanism, strings.Join(SASLMechanisms(), ", "))
	case a.Username == "":
		bad("sasl.username", "is required with sasl.mechanism %s", a.Mechanism)
	case (a.PasswordFile == "") == (a.PasswordEnv == ""):
		bad("sasl.password_file", "or sasl.password_env (exactly one) must say where the password is: a file, or the name of an environment variable")
	}
	return errors.Join(errs...)
}

// Load validates the block and reads what it names (the CA, the client
// certificate and key, the password) into the settings clients use. A zero
// block loads as nil: plaintext without SASL. getenv reads the environment
// (nil: os.Getenv).
func (s KafkaSecurity) Load(prefix string, getenv func(string) string) (*KafkaAuth, error) {
	if err := s.Validate(prefix); err != nil {
		return nil, err
	}
	if s.IsZero() {
		return nil, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	a := &KafkaAuth{}
	if s.TLS.Enabled {
		tc, err := s.TLS.load(prefix)
		if err != nil {
			return nil, err
		}
		a.TLS = tc
	}
	if s.SASL.Mechanism != "" {
		pw, err := s.SASL.password(prefix, getenv)
		if err != nil {
			return nil, err
		}
		a.SASL = &SASL{Mechanism: s.SASL.Mechanism, User: s.SASL.Username, Password: pw}
	}
	return a, nil
}

func (t KafkaTLS) load(prefix string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %stls.ca_file: %v; point it at the PEM file of the brokers' certificate authority", ErrKafkaSecurity, prefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %stls.ca_file: %s holds no PEM certificate; point it at the PEM file of the brokers' certificate authority", ErrKafkaSecurity, prefix, t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %stls.cert_file and tls.key_file: %v; give the client's PEM certificate and its key", ErrKafkaSecurity, prefix, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func (a KafkaSASL) password(prefix string, getenv func(string) string) (string, error) {
	if a.PasswordEnv != "" {
		pw := getenv(a.PasswordEnv)
		if pw == "" {
			return "", fmt.Errorf("%w: %ssasl.password_env: the environment variable %s is empty or not set; set it to the password of %s", ErrKafkaSecurity, prefix, a.PasswordEnv, a.Username)
		}
		return pw, nil
	}
	b, err := os.ReadFile(a.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("%w: %ssasl.password_file: %v; make the file readable by hotpair, or use sasl.password_env", ErrKafkaSecurity, prefix, err)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("%w: %ssasl.password_file: %s is empty; write the password of %s into it", ErrKafkaSecurity, prefix, a.PasswordFile, a.Username)
	}
	return pw, nil
}
