// Package devsec secures in-process kfake clusters the way a production
// cluster is secured, for the sandbox, the benchmarks and the tests: a
// certificate authority generated at start, a broker certificate for the
// loopback addresses signed by it, TLS on every listener, and SASL with one
// user (its random password valid for PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512). Clients connect with Auth, or with any Kafka client given
// the CA file and the credentials (kcat: see docs/sandbox).
package devsec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hotpair/hotpair/contract"
)

// DefaultUser is the SASL user of a Setup.
const DefaultUser = "hotpair"

// Setup is one generated CA with its broker certificate and SASL user.
type Setup struct {
	// User and Password are the SASL credentials every cluster accepts.
	User, Password string
	// Mechanism is what Auth uses (every cluster accepts all three).
	Mechanism string
	caPEM     []byte
	pool      *x509.CertPool
	server    tls.Certificate
}

// New generates a CA, a broker certificate for 127.0.0.1, ::1 and
// localhost valid for a year, and a random password.
func New() (*Setup, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "hotpair development CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("devsec: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("devsec: broker certificate: %w", err)
	}
	pw := make([]byte, 12)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	s := &Setup{User: DefaultUser, Password: hex.EncodeToString(pw), Mechanism: contract.SASLSCRAMSHA256,
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool(),
		server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: nil}}
	s.pool.AddCert(ca)
	return s, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// CAPEM is the CA certificate in PEM, what clients trust.
func (s *Setup) CAPEM() []byte { return s.caPEM }

// WriteCA writes the CA certificate (PEM) to path, readable by all: it is
// public.
func (s *Setup) WriteCA(path string) error { return os.WriteFile(path, s.caPEM, 0o644) }

// WritePassword writes the password to path, readable by the owner only.
func (s *Setup) WritePassword(path string) error {
	return os.WriteFile(path, []byte(s.Password+"\n"), 0o600)
}

// ClusterOpts are the kfake options of a cluster with TLS on its listeners
// and SASL on: the user may authenticate with PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512; a client without TLS or without the credentials is refused.
func (s *Setup) ClusterOpts() []kfake.Opt {
	return []kfake.Opt{
		kfake.ListenFn(listenFn(&tls.Config{Certificates: []tls.Certificate{s.server}, MinVersion: tls.VersionTLS12})),
		kfake.EnableSASL(),
		kfake.Superuser(contract.SASLSCRAMSHA256, s.User, s.Password),
		kfake.Superuser(contract.SASLSCRAMSHA512, s.User, s.Password),
		kfake.Superuser(contract.SASLPlain, s.User, s.Password),
	}
}

// Auth is what a client of such a cluster connects with.
func (s *Setup) Auth() *contract.KafkaAuth {
	return &contract.KafkaAuth{
		TLS:  &tls.Config{RootCAs: s.pool, MinVersion: tls.VersionTLS12},
		SASL: &contract.SASL{Mechanism: s.Mechanism, User: s.User, Password: s.Password},
	}
}

// Security is the config block a daemon connects to such a cluster with,
// given the files WriteCA and WritePassword wrote.
func (s *Setup) Security(caFile, passwordFile string) contract.KafkaSecurity {
	return contract.KafkaSecurity{
		TLS:  contract.KafkaTLS{Enabled: true, CAFile: caFile},
		SASL: contract.KafkaSASL{Mechanism: s.Mechanism, Username: s.User, PasswordFile: passwordFile},
	}
}
