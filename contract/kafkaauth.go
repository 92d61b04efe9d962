package contract

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
)

// SASL mechanisms a KafkaAuth may name.
const (
	SASLPlain       = "PLAIN"
	SASLSCRAMSHA256 = "SCRAM-SHA-256"
	SASLSCRAMSHA512 = "SCRAM-SHA-512"
)

// SASLMechanisms returns the SASL mechanisms hotpair's clients speak.
func SASLMechanisms() []string { return []string{SASLPlain, SASLSCRAMSHA256, SASLSCRAMSHA512} }

// KafkaAuth is how every client of one Kafka cluster connects: TLS to the
// brokers and SASL authentication. nil (or zero) is plaintext without SASL.
// Daemons load it from their config's tls and sasl keys (with the password
// from a file or the environment); an embedder of the selector's views or a
// pipeline builds it in code. It never prints its password.
type KafkaAuth struct {
	// TLS, when set, encrypts the connections and checks the brokers'
	// certificates with it.
	TLS *tls.Config
	// SASL, when set, authenticates the client.
	SASL *SASL
}

// SASL is a SASL mechanism with its credentials.
type SASL struct {
	// Mechanism is SASLPlain, SASLSCRAMSHA256 or SASLSCRAMSHA512.
	Mechanism string
	User      string
	// Password is a secret: never log it.
	Password string
}

// Validate reports a mechanism hotpair does not speak or missing credentials.
func (a *KafkaAuth) Validate() error {
	if a == nil || a.SASL == nil {
		return nil
	}
	switch s := a.SASL; {
	case s.Mechanism != SASLPlain && s.Mechanism != SASLSCRAMSHA256 && s.Mechanism != SASLSCRAMSHA512:
		return fmt.Errorf("SASL mechanism %q is none of %s", s.Mechanism, strings.Join(SASLMechanisms(), ", "))
	case s.User == "" || s.Password == "":
		return fmt.Errorf("SASL %s needs a user and a password", s.Mechanism)
	}
	return nil
}

// String describes the settings without secrets, e.g. "TLS, SASL
// SCRAM-SHA-512 as hotpair-a" or "plaintext".
func (a *KafkaAuth) String() string {
	var parts []string
	if a != nil && a.TLS != nil {
		parts = append(parts, "TLS")
	}
	if a != nil && a.SASL != nil {
		parts = append(parts, a.SASL.String())
	}
	if len(parts) == 0 {
		return "plaintext"
	}
	return strings.Join(parts, ", ")
}

// GoString keeps the password out of %#v.
func (a *KafkaAuth) GoString() string { return "contract.KafkaAuth(" + a.String() + ")" }

// LogValue keeps the password out of logs.
func (a *KafkaAuth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// String is "SASL <mechanism> as <user>", without the password.
func (s *SASL) String() string { return "SASL " + s.Mechanism + " as " + s.User }

// GoString keeps the password out of %#v.
func (s *SASL) GoString() string { return "contract.SASL(" + s.String() + ")" }

// Format prints String for every verb, so that no verb (%v, %+v, %#v)
// shows the password.
func (s SASL) Format(f fmt.State, _ rune) { fmt.Fprint(f, s.String()) }

// LogValue keeps the password out of logs.
func (s *SASL) LogValue() slog.Value { return slog.StringValue(s.String()) }
