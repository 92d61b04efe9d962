package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrAuth is wrapped by CheckAuth when a broker refuses the client's TLS or
// SASL settings: a wrong password, an unknown user, a certificate the
// client does not trust, a broker that speaks no TLS.
var ErrAuth = errors.New("kafka: the broker refused the client's TLS or SASL settings")

// DefaultCheckTimeout bounds CheckAuth when its context has no deadline.
const DefaultCheckTimeout = 15 * time.Second

// CheckAuth connects to the cluster's seed brokers, one after the other,
// with a client of its own and asks for metadata, which needs a connection
// that passed TLS and SASL. It returns nil once one answers. When a broker
// refuses the TLS handshake or the SASL credentials it returns an error
// wrapping ErrAuth that names the broker, the mechanism and the fix, so a
// daemon with a wrong password stops at start instead of retrying silently
// forever. A cluster that cannot be reached (down, or slower than ctx
// allows; DefaultCheckTimeout without a deadline) is no configuration error:
// it returns nil and the daemon starts as it does during any outage.
func CheckAuth(ctx context.Context, c Cluster) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCheckTimeout)
		defer cancel()
	}
	var h saslHook
	cl, err := NewClient(c, "hotpair-check", kgo.WithHooks(&h))
	if err != nil {
		return err
	}
	defer cl.Close()
	for i, b := range cl.SeedBrokers() {
		_, err := b.Request(ctx, kmsg.NewPtrMetadataRequest())
		if err == nil {
			return nil
		}
		addr := fmt.Sprintf("seed %d", i)
		if i < len(c.Brokers) {
			addr = c.Brokers[i]
		}
		if h.refused.Load() && !errors.Is(err, kerr.SaslAuthenticationFailed) {
			// kfake closes the connection on bad credentials where Kafka
			// answers SaslAuthenticationFailed: the same refusal.
			err = fmt.Errorf("%w: the broker closed the connection during SASL authentication", kerr.SaslAuthenticationFailed)
		}
		if e := securityError(err, addr, c); e != nil {
			return e
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// saslHook sees a failed read of a SASL authentication answer: the broker
// hung up on the client's credentials.
type saslHook struct{ refused atomic.Bool }

func (h *saslHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.SASLAuthenticate) && err != nil {
		h.refused.Store(true)
	}
}

// securityError explains err when it is a refusal of the connection's
// security, and returns nil for anything else.
func securityError(err error, addr string, c Cluster) error {
	var mech, user string
	if c.Auth != nil && c.Auth.SASL != nil {
		mech, user = c.Auth.SASL.Mechanism, c.Auth.SASL.User
	}
	tlsOn := c.Auth != nil && c.Auth.TLS != nil
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
		header    tls.RecordHeaderError
		alert     tls.AlertError
		firstRead *kgo.ErrFirstReadEOF
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("%w: %s cluster, broker %s: SASL %s authentication of user %q failed (%v); check the user and the password (sasl.username and sasl.password_file or sasl.password_env in a config; --kafka-sasl-* flags)",
			ErrAuth, nameOf(c), addr, mech, user, err)
	case errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("%w: %s cluster, broker %s: the broker does not accept SASL %s (%v); set sasl.mechanism (--kafka-sasl-mechanism) to one the broker's listener enables",
			ErrAuth, nameOf(c), addr, mech, err)
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &verify):
		return fmt.Errorf("%w: %s cluster, broker %s: its TLS certificate is not trusted (%v); set tls.ca_file (--kafka-tls-ca-file) to the brokers' certificate authority, or tls.server_name (--kafka-tls-server-name) to the name in their certificate",
			ErrAuth, nameOf(c), addr, err)
	case errors.As(err, &header):
		return fmt.Errorf("%w: %s cluster, broker %s: it does not speak TLS (%v); remove the tls block (--kafka-tls* flags) or use the broker's TLS listener",
			ErrAuth, nameOf(c), addr, err)
	case errors.As(err, &alert):
		return fmt.Errorf("%w: %s cluster, broker %s: it refused the TLS handshake (%v); a broker that wants a client certificate needs tls.cert_file and tls.key_file (--kafka-tls-cert-file, --kafka-tls-key-file)",
			ErrAuth, nameOf(c), addr, err)
	case !tlsOn && errors.As(err, &firstRead):
		return fmt.Errorf("%w: %s cluster, broker %s: it closed the connection at once, as a TLS listener does to a client without TLS (%v); set tls.enabled: true and the other tls keys (--kafka-tls-ca-file on the command line)",
			ErrAuth, nameOf(c), addr, err)
	}
	return nil
}

func nameOf(c Cluster) string {
	if c.Name == "" {
		return "the"
	}
	return "the " + c.Name
}
