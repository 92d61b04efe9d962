package kgoka

import (
	"context"

	"github.com/IBM/sarama"
	"github.com/hotpair/hotpair/contract"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// setSecurity gives a sarama config the cluster's TLS and SASL, as
// kafka.NewClient gives them to franz-go clients.
func setSecurity(c *sarama.Config, auth *contract.KafkaAuth) {
	if auth == nil {
		return
	}
	if auth.TLS != nil {
		c.Net.TLS.Enable = true
		c.Net.TLS.Config = auth.TLS.Clone()
	}
	if auth.SASL == nil {
		return
	}
	mech, user, password := auth.SASL.Mechanism, auth.SASL.User, auth.SASL.Password
	c.Net.SASL.Enable = true
	c.Net.SASL.Handshake = true
	c.Net.SASL.Version = sarama.SASLHandshakeV1
	c.Net.SASL.User, c.Net.SASL.Password = user, password
	switch mech {
	case contract.SASLPlain:
		c.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case contract.SASLSCRAMSHA256:
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
			return &scramClient{mech: func(a scram.Auth) sasl.Mechanism { return a.AsSha256Mechanism() }}
		}
	case contract.SASLSCRAMSHA512:
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
			return &scramClient{mech: func(a scram.Auth) sasl.Mechanism { return a.AsSha512Mechanism() }}
		}
	}
}

// scramClient is sarama's SCRAM conversation on franz-go's SCRAM
// implementation (sarama ships none): Step("") starts the session and
// returns the client-first message; each later Step answers the broker's
// message until the broker's signature is verified.
type scramClient struct {
	mech     func(scram.Auth) sasl.Mechanism
	auth     scram.Auth
	session  sasl.Session
	finished bool
}

func (s *scramClient) Begin(user, password, authzID string) error {
	s.auth = scram.Auth{User: user, Pass: password, Zid: authzID}
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) {
	if s.session == nil {
		session, first, err := s.mech(s.auth).Authenticate(context.Background(), "")
		if err != nil {
			return "", err
		}
		s.session = session
		return string(first), nil
	}
	done, next, err := s.session.Challenge([]byte(challenge))
	if err != nil {
		return "", err
	}
	s.finished = done
	return string(next), nil
}

func (s *scramClient) Done() bool { return s.finished }
