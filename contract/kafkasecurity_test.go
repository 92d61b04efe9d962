package contract

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad security blocks fail at load naming the key and the fix; secrets
// never show in the errors.
func TestKafkaSecurityLoadNamesTheKeyAndTheFix(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "unreadable")
	if err := os.WriteFile(unreadable, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	scram := KafkaSASL{Mechanism: SASLSCRAMSHA512, Username: "u", PasswordFile: pw}
	for _, tc := range []struct {
		name string
		sec  KafkaSecurity
		want []string
	}{
		{"missing CA file", KafkaSecurity{TLS: KafkaTLS{Enabled: true, CAFile: filepath.Join(dir, "nope.pem")}},
			[]string{"p.tls.ca_file", "no such file", "point it at the PEM file"}},
		{"CA file without a certificate", KafkaSecurity{TLS: KafkaTLS{Enabled: true, CAFile: notPEM}},
			[]string{"p.tls.ca_file", "holds no PEM certificate"}},
		{"TLS keys without TLS", KafkaSecurity{TLS: KafkaTLS{CAFile: notPEM}}, []string{"p.tls.enabled", "set tls.enabled: true"}},
		{"certificate without key", KafkaSecurity{TLS: KafkaTLS{Enabled: true, CertFile: notPEM}}, []string{"p.tls.cert_file", "set both"}},
		{"unknown mechanism", KafkaSecurity{SASL: KafkaSASL{Mechanism: "GSSAPI", Username: "u", PasswordFile: pw}},
			[]string{"p.sasl.mechanism", `"GSSAPI" is unknown`, "SCRAM-SHA-512"}},
		{"no username", KafkaSecurity{SASL: KafkaSASL{Mechanism: SASLPlain, PasswordFile: pw}}, []string{"p.sasl.username"}},
		{"no password source", KafkaSecurity{SASL: KafkaSASL{Mechanism: SASLPlain, Username: "u"}}, []string{"p.sasl.password_file", "password_env"}},
		{"password file unreadable", KafkaSecurity{SASL: KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordFile: unreadable}},
			[]string{"p.sasl.password_file", "make the file readable"}},
		{"password variable unset", KafkaSecurity{SASL: KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordEnv: "HOTPAIR_TEST_NO_SUCH_VAR"}},
			[]string{"p.sasl.password_env", "HOTPAIR_TEST_NO_SUCH_VAR", "is empty or not set"}},
		{"keys without a mechanism", KafkaSecurity{SASL: KafkaSASL{Username: "u"}}, []string{"p.sasl.mechanism", "is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "password file unreadable" && os.Geteuid() == 0 {
				t.Skip("root reads any file")
			}
			_, err := tc.sec.Load("p.", func(string) string { return "" })
			if !errors.Is(err, ErrKafkaSecurity) {
				t.Fatalf("Load: %v, want ErrKafkaSecurity", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	a, err := KafkaSecurity{TLS: KafkaTLS{Enabled: true}, SASL: scram}.Load("", nil)
	if err != nil || a.TLS == nil || a.SASL.Password != "s3cret" || a.SASL.Mechanism != SASLSCRAMSHA512 {
		t.Fatalf("good block: %+v, %v", a, err)
	}
	env, err := KafkaSecurity{SASL: KafkaSASL{Mechanism: SASLPlain, Username: "u", PasswordEnv: "V"}}.Load("", func(k string) string { return "from-" + k })
	if err != nil || env.SASL.Password != "from-V" || env.TLS != nil {
		t.Fatalf("password from the environment: %+v, %v", env, err)
	}
	if a, err := (KafkaSecurity{}).Load("", nil); a != nil || err != nil {
		t.Fatalf("zero block: %v, %v", a, err)
	}
}

// Printing the settings in any way never shows the password.
func TestKafkaAuthNeverPrintsThePassword(t *testing.T) {
	a := &KafkaAuth{SASL: &SASL{Mechanism: SASLSCRAMSHA256, User: "u", Password: "s3cret"}}
	for _, s := range []string{fmtAll(a), fmtAll(*a), fmtAll(a.SASL), fmtAll(*a.SASL)} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("printed the password: %s", s)
		}
	}
	if got := a.String(); got != "SASL SCRAM-SHA-256 as u" {
		t.Errorf("String: %q", got)
	}
}

func fmtAll(v any) string {
	return fmt.Sprintf("%v %+v %#v %s", v, v, v, v)
}
