package kafka

import (
	"errors"
	"flag"
	"strings"

	"github.com/hotpair/hotpair/contract"
)

// Flags are the security block on the command line, for the commands
// without a YAML config (ingest, history, selectord, replay, bench): the
// same keys as contract.KafkaSecurity, applied to every cluster the command
// reaches. Any --kafka-tls-* flag turns TLS on.
type Flags struct {
	sec contract.KafkaSecurity
}

// AddFlags registers the --kafka-* flags on fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	t, s := &f.sec.TLS, &f.sec.SASL
	fs.BoolVar(&t.Enabled, "kafka-tls", false, "connect to the brokers over TLS (with the system's roots unless --kafka-tls-ca-file)")
	fs.StringVar(&t.CAFile, "kafka-tls-ca-file", "", "PEM file of the brokers' certificate authority (turns TLS on)")
	fs.StringVar(&t.CertFile, "kafka-tls-cert-file", "", "PEM client certificate, with --kafka-tls-key-file (turns TLS on)")
	fs.StringVar(&t.KeyFile, "kafka-tls-key-file", "", "PEM key of the client certificate")
	fs.StringVar(&t.ServerName, "kafka-tls-server-name", "", "the name the brokers' certificates carry (default: each broker's host)")
	fs.StringVar(&s.Mechanism, "kafka-sasl-mechanism", "", "SASL mechanism: "+strings.Join(contract.SASLMechanisms(), ", "))
	fs.StringVar(&s.Username, "kafka-sasl-username", "", "SASL user")
	fs.StringVar(&s.PasswordFile, "kafka-sasl-password-file", "", "file holding the SASL password")
	fs.StringVar(&s.PasswordEnv, "kafka-sasl-password-env", "", "environment variable holding the SASL password")
	return f
}

// flagNames rewrites the block's keys in errors as the flags that set them.
var flagNames = strings.NewReplacer(
	"tls.enabled", "--kafka-tls", "tls.ca_file", "--kafka-tls-ca-file", "tls.cert_file", "--kafka-tls-cert-file",
	"tls.key_file", "--kafka-tls-key-file", "tls.server_name", "--kafka-tls-server-name",
	"sasl.mechanism", "--kafka-sasl-mechanism", "sasl.username", "--kafka-sasl-username",
	"sasl.password_file", "--kafka-sasl-password-file", "sasl.password_env", "--kafka-sasl-password-env",
	"the sasl and tls blocks", "the --kafka-tls and --kafka-sasl-* flags", "the tls block", "the --kafka-tls flags",
	"the other sasl keys", "the other --kafka-sasl-* flags")

// Security returns the block the flags set.
func (f *Flags) Security() contract.KafkaSecurity {
	s := f.sec
	t := s.TLS
	s.TLS.Enabled = t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != ""
	return s
}

// Load reads what the flags name (see contract.KafkaSecurity.Load); errors
// name the flags.
func (f *Flags) Load() (*contract.KafkaAuth, error) {
	a, err := f.Security().Load("", nil)
	if err != nil {
		return nil, errors.New(flagNames.Replace(err.Error()))
	}
	return a, nil
}

// FlagArgs are the --kafka-* flags that give a child process (a hotpair
// pipeline) the block sec.
func FlagArgs(sec contract.KafkaSecurity) []string {
	var args []string
	add := func(name, v string) {
		if v != "" {
			args = append(args, "--"+name, v)
		}
	}
	if sec.TLS.Enabled {
		args = append(args, "--kafka-tls")
	}
	add("kafka-tls-ca-file", sec.TLS.CAFile)
	add("kafka-tls-cert-file", sec.TLS.CertFile)
	add("kafka-tls-key-file", sec.TLS.KeyFile)
	add("kafka-tls-server-name", sec.TLS.ServerName)
	add("kafka-sasl-mechanism", sec.SASL.Mechanism)
	add("kafka-sasl-username", sec.SASL.Username)
	add("kafka-sasl-password-file", sec.SASL.PasswordFile)
	add("kafka-sasl-password-env", sec.SASL.PasswordEnv)
	return args
}
