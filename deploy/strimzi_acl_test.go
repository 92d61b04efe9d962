package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// strimziACL is one rule of a KafkaUser's spec.authorization.acls
// (type simple), as Strimzi's kafka.strimzi.io/v1 schema has it.
type strimziACL struct {
	Type     string `json:"type"` // allow (the default) or deny
	Resource struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		PatternType string `json:"patternType"` // literal (the default) or prefix
	} `json:"resource"`
	Host       string   `json:"host"` // * (the default)
	Operations []string `json:"operations"`
}

// strimziObject is what the suite reads of the Strimzi resources (Kafka,
// KafkaNodePool, KafkaUser), decoded as plain YAML: their CRDs are not in
// k8s.io/api.
type strimziObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Replicas int      `json:"replicas"` // KafkaNodePool
		Roles    []string `json:"roles"`
		Kafka    struct {
			Listeners []struct {
				Name           string `json:"name"`
				Port           int    `json:"port"`
				Type           string `json:"type"`
				Authentication *struct {
					Type string `json:"type"`
				} `json:"authentication"`
			} `json:"listeners"`
			Authorization *struct {
				Type       string   `json:"type"`
				SuperUsers []string `json:"superUsers"`
			} `json:"authorization"`
			Config map[string]any `json:"config"`
		} `json:"kafka"`
		// KafkaUser: the user name is userName, or else the object's name.
		UserName       string `json:"userName"`
		Authentication *struct {
			Type string `json:"type"`
		} `json:"authentication"`
		Authorization *struct {
			Type string          `json:"type"`
			ACLs json.RawMessage `json:"acls"`
		} `json:"authorization"`
	} `json:"spec"`
}

// strimziFile returns the path of a side's Strimzi resources and the
// resources it holds.
func strimziFile(t *testing.T, side string) (string, []strimziObject) {
	t.Helper()
	file := filepath.Join(k8sDir, "strimzi", "kafka-"+side+".yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []strimziObject
	for _, doc := range documents(t, b) {
		var o strimziObject
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		objs = append(objs, o)
	}
	return file, objs
}

// userName is the KafkaUser's Kafka user name: userName, or else its name.
func (o strimziObject) userName() string {
	if o.Spec.UserName != "" {
		return o.Spec.UserName
	}
	return o.Metadata.Name
}

// decodeACLs decodes an acls list (JSON), rejecting unknown fields: a
// misspelled key would otherwise vanish and leave a rule broader or empty.
func decodeACLs(raw []byte) ([]strimziACL, error) {
	var acls []strimziACL
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&acls); err != nil {
		return nil, err
	}
	return acls, nil
}

// aclGrants are the grants of acls, one per operation, with Strimzi's
// defaults filled in (allow, literal, any host), sorted and deduplicated:
// two lists that grant the same are equal however their rules are grouped
// or ordered.
func aclGrants(acls []strimziACL) []string {
	var out []string
	for _, a := range acls {
		typ, pattern, host := cmpOr(a.Type, "allow"), cmpOr(a.Resource.PatternType, "literal"), cmpOr(a.Host, "*")
		for _, op := range a.Operations {
			out = append(out, fmt.Sprintf("%s %s on %s %s (%s) from %s", typ, op, a.Resource.Type, a.Resource.Name, pattern, host))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// aclDiff describes how have differs from want ("" if they grant the same).
func aclDiff(want, have []strimziACL) string {
	w, h := aclGrants(want), aclGrants(have)
	var missing, extra []string
	for _, g := range w {
		if !slices.Contains(h, g) {
			missing = append(missing, g)
		}
	}
	for _, g := range h {
		if !slices.Contains(w, g) {
			extra = append(extra, g)
		}
	}
	var b strings.Builder
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\n  missing: %s", strings.Join(missing, "\n           "))
	}
	if len(extra) > 0 {
		fmt.Fprintf(&b, "\n  not needed: %s", strings.Join(extra, "\n              "))
	}
	return b.String()
}

// daemonACLs runs `hotpair config acls --format strimzi` on a config and
// returns the one list it prints (a pipeline's on its cluster, a
// monitor's on each of the two).
func daemonACLs(t *testing.T, kind, file string) []strimziACL {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(hotpairBin(t), "config", "acls", "--kind", kind, "--format", "strimzi", file)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("hotpair config acls --kind %s --format strimzi %s: %v\n%s", kind, file, err, errOut.String())
	}
	headers := 0 // "# KIND FILE: on CLUSTER", one per list
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "# ") {
			headers++
		}
	}
	if headers != 1 {
		t.Fatalf("hotpair config acls %s: %d lists, want one\n%s", file, headers, out.String())
	}
	j, err := yaml.YAMLToJSON(stripComments(out.Bytes()))
	if err != nil {
		t.Fatalf("hotpair config acls %s: not YAML: %v\n%s", file, err, out.String())
	}
	acls, err := decodeACLs(j)
	if err != nil || len(acls) == 0 {
		t.Fatalf("hotpair config acls %s: not a Strimzi acls list (%v)\n%s", file, err, out.String())
	}
	return acls
}

// saslUsername is the sasl.username a config names, at the path of keys.
func saslUsername(t *testing.T, file string, path ...string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, k := range append(path, "sasl", "username") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	s, _ := v.(string)
	if s == "" {
		t.Fatalf("%s: no %s", file, strings.Join(append(path, "sasl", "username"), "."))
	}
	return s
}

// Kafka authorization is on in both Strimzi clusters, and each hotpair
// daemon is its own KafkaUser there holding exactly the ACLs the binary
// derives from its config (`hotpair config acls --format strimzi`): a
// daemon given a topic, group or setting that needs another grant fails
// this test until its KafkaUser is updated, and so does a grant no daemon
// needs. Every config's sasl.username names a KafkaUser of its own
// cluster; no user serves two daemons; no user is left over.
func TestStrimziUsersHoldTheirDaemonsACLs(t *testing.T) {
	seen := map[string]string{} // namespace/name → file: one object each
	for _, side := range []string{"primary", "standby"} {
		file, objs := strimziFile(t, side)
		var kafka *strimziObject
		users := map[string]strimziObject{} // by user name
		for _, o := range objs {
			switch o.Kind {
			case "Kafka":
				kafka = &o
			case "KafkaUser":
				id := o.Metadata.Namespace + "/" + o.Metadata.Name
				if f, dup := seen[id]; dup {
					t.Errorf("KafkaUser %s is in %s and %s: one object, the second apply overwrites the first", id, f, file)
				}
				seen[id] = file
				users[o.userName()] = o
			}
		}
		if kafka == nil {
			t.Fatalf("%s: no Kafka", file)
		}
		if a := kafka.Spec.Kafka.Authorization; a == nil || a.Type != "simple" {
			t.Errorf("%s: Kafka %s has no authorization: simple; without it the users' ACLs are not enforced", file, kafka.Metadata.Name)
		} else if len(a.SuperUsers) > 0 {
			t.Errorf("%s: superUsers %v bypass every ACL; no hotpair daemon needs that", file, a.SuperUsers)
		}
		daemons := []struct{ kind, config, user string }{
			{"pipeline", filepath.Join(k8sDir, "overlays", side, "pipeline.yml"), ""},
			{"monitor", filepath.Join(k8sDir, "base", "monitor.yml"), ""},
		}
		daemons[0].user = saslUsername(t, daemons[0].config)
		daemons[1].user = saslUsername(t, daemons[1].config, "clusters", side)
		served := map[string]string{}
		for _, d := range daemons {
			u, ok := users[d.user]
			if !ok {
				t.Errorf("%s: sasl.username %q names no KafkaUser of the %s cluster (%s)", d.config, d.user, side, file)
				continue
			}
			if other, dup := served[d.user]; dup {
				t.Errorf("the %s and the %s share the KafkaUser %s: each daemon its own user, with its own ACLs", other, d.kind, d.user)
			}
			served[d.user] = d.kind
			if u.Metadata.Labels["strimzi.io/cluster"] != kafka.Metadata.Name || u.Metadata.Namespace != kafka.Metadata.Namespace {
				t.Errorf("KafkaUser %s: cluster label %q in namespace %s, want %s in %s (the User Operator of its cluster manages it)",
					u.Metadata.Name, u.Metadata.Labels["strimzi.io/cluster"], u.Metadata.Namespace, kafka.Metadata.Name, kafka.Metadata.Namespace)
			}
			if u.Spec.Authentication == nil || len(kafka.Spec.Kafka.Listeners) == 0 || kafka.Spec.Kafka.Listeners[0].Authentication == nil ||
				u.Spec.Authentication.Type != kafka.Spec.Kafka.Listeners[0].Authentication.Type {
				t.Errorf("KafkaUser %s: its authentication is not the listener's (scram-sha-512)", u.Metadata.Name)
			}
			if u.Spec.Authorization == nil || u.Spec.Authorization.Type != "simple" {
				t.Errorf("KafkaUser %s: want authorization type simple with the %s's ACLs", u.Metadata.Name, d.kind)
				continue
			}
			have, err := decodeACLs(u.Spec.Authorization.ACLs)
			if err != nil {
				t.Errorf("KafkaUser %s: spec.authorization.acls: %v", u.Metadata.Name, err)
				continue
			}
			if diff := aclDiff(daemonACLs(t, d.kind, d.config), have); diff != "" {
				t.Errorf("KafkaUser %s (%s) does not hold what `hotpair config acls --format strimzi %s` prints:%s",
					u.Metadata.Name, file, d.config, diff)
			}
		}
		for name, u := range users {
			if served[name] == "" {
				t.Errorf("KafkaUser %s (%s) serves no daemon's config", u.Metadata.Name, file)
			}
		}
	}

	// The comparison sees a changed daemon: the primary pipeline with its
	// topics renamed (a topic prefix) needs grants its user lacks.
	cfg, err := os.ReadFile(filepath.Join(k8sDir, "overlays", "primary", "pipeline.yml"))
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "pipeline.yml")
	if err := os.WriteFile(moved, append(cfg, "topic_prefix: ads.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	before := daemonACLs(t, "pipeline", filepath.Join(k8sDir, "overlays", "primary", "pipeline.yml"))
	diff := aclDiff(daemonACLs(t, "pipeline", moved), before)
	if !strings.Contains(diff, "missing:") || !strings.Contains(diff, "allow Read on topic ads.ad-events (literal)") || !strings.Contains(diff, "not needed:") {
		t.Fatalf("a pipeline with renamed topics passed the comparison: %q", diff)
	}
	if diff := aclDiff(before, before[1:]); !strings.Contains(diff, "missing") {
		t.Fatalf("a list without its first rule passed the comparison: %q", diff)
	}
}
