package kafka

import (
	"crypto/tls"

	"github.com/hotpair/hotpair/contract"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// mechanismOf is the franz-go SASL mechanism of the settings (nil: none).
func mechanismOf(a *contract.KafkaAuth) sasl.Mechanism {
	if a == nil || a.SASL == nil {
		return nil
	}
	s := a.SASL
	switch s.Mechanism {
	case contract.SASLPlain:
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()
	case contract.SASLSCRAMSHA256:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()
	case contract.SASLSCRAMSHA512:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()
	}
	return nil
}

// tlsOf is a copy of the TLS settings (nil: no TLS).
func tlsOf(a *contract.KafkaAuth) *tls.Config {
	if a == nil || a.TLS == nil {
		return nil
	}
	return a.TLS.Clone()
}
