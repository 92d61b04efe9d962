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
	File       string `json:"-"` // the file it is in
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

// strimziGlobs are where the Strimzi resources are: the live clusters and
// their daemons' users (strimzi/), the dark canary's cluster and its
// daemons' users on every cluster (dark/strimzi/). Applied with kubectl
// apply -f, not kustomize: they live in the namespace kafka.
var strimziGlobs = []string{
	filepath.Join(k8sDir, "strimzi", "*.yaml"),
	filepath.Join(k8sDir, "dark", "strimzi", "*.yaml"),
}

// strimziObjects returns every Strimzi resource of strimziGlobs.
func strimziObjects(t *testing.T) []strimziObject {
	t.Helper()
	var objs []strimziObject
	for _, g := range strimziGlobs {
		files, _ := filepath.Glob(g)
		if len(files) == 0 {
			t.Fatalf("no Strimzi resources at %s", g)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range documents(t, b) {
				var o strimziObject
				if err := yaml.Unmarshal(doc, &o); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				o.File = file
				objs = append(objs, o)
			}
		}
	}
	return objs
}

// strimziCluster is one Strimzi Kafka and what belongs to it (by the label
// strimzi.io/cluster): its node pools' brokers and its users.
type strimziCluster struct {
	kafka     strimziObject
	bootstrap string                   // the first listener's bootstrap address
	nodes     int                      // the node pools' replicas
	users     map[string]strimziObject // by Kafka user name
}

// strimziClusters groups objs by Kafka. A node pool or user whose label
// names no Kafka, or that is not in its Kafka's namespace, is an error (its
// cluster's operators would never see it).
func strimziClusters(t *testing.T, objs []strimziObject) map[string]*strimziCluster {
	t.Helper()
	clusters := map[string]*strimziCluster{}
	for _, o := range objs {
		if o.Kind != "Kafka" {
			continue
		}
		if _, dup := clusters[o.Metadata.Name]; dup {
			t.Fatalf("two Kafkas named %s", o.Metadata.Name)
		}
		c := &strimziCluster{kafka: o, users: map[string]strimziObject{}}
		if ls := o.Spec.Kafka.Listeners; len(ls) > 0 {
			c.bootstrap = fmt.Sprintf("%s-kafka-bootstrap.%s.svc:%d", o.Metadata.Name, o.Metadata.Namespace, ls[0].Port)
		}
		clusters[o.Metadata.Name] = c
	}
	for _, o := range objs {
		if o.Kind != "KafkaNodePool" && o.Kind != "KafkaUser" {
			continue
		}
		c := clusters[o.Metadata.Labels["strimzi.io/cluster"]]
		if c == nil || o.Metadata.Namespace != c.kafka.Metadata.Namespace {
			t.Errorf("%s %s (%s): cluster label %q in namespace %s names no Kafka of its namespace (the operators of its cluster would not see it)",
				o.Kind, o.Metadata.Name, o.File, o.Metadata.Labels["strimzi.io/cluster"], o.Metadata.Namespace)
			continue
		}
		if o.Kind == "KafkaNodePool" {
			c.nodes += o.Spec.Replicas
		} else {
			c.users[o.userName()] = o
		}
	}
	return clusters
}

// kafkaClient is one daemon's block for one Kafka cluster: its config, the
// keys that lead to the block (brokers, tls, sasl), the Strimzi Kafka it
// reaches, and for a dark target's block the target's name (its brokers
// are the target document's, not the config's, and its ACLs those of
// `hotpair config acls --dark-target NAME`).
type kafkaClient struct {
	kind, config string
	block        []string
	cluster      string
	darkTarget   string
}

func (k kafkaClient) String() string {
	if len(k.block) == 0 {
		return k.config
	}
	return k.config + " " + strings.Join(k.block, ".")
}

// kafkaClients is the daemon table: every daemon's block for every cluster
// it reaches. A daemon that reaches another cluster, or a new daemon, needs
// a row here and its KafkaUser there.
var kafkaClients = []kafkaClient{
	{"pipeline", filepath.Join(k8sDir, "overlays", "primary", "pipeline.yml"), nil, "hotpair-a", ""},
	{"pipeline", filepath.Join(k8sDir, "overlays", "standby", "pipeline.yml"), nil, "hotpair-b", ""},
	{"monitor", filepath.Join(k8sDir, "base", "monitor.yml"), []string{"clusters", "primary"}, "hotpair-a", ""},
	{"monitor", filepath.Join(k8sDir, "base", "monitor.yml"), []string{"clusters", "standby"}, "hotpair-b", ""},
	// The dark canary of the target canary, fed from the primary
	// (dark/): the dispatcher reads the primary and writes the target, the
	// comparator reads all three, the dark pipeline is on the target's.
	{"dark-dispatch", filepath.Join(k8sDir, "dark", "dispatch.yml"), []string{"live"}, "hotpair-a", ""},
	{"dark-dispatch", filepath.Join(k8sDir, "dark", "dispatch.yml"), []string{"targets"}, "hotpair-dark", "canary"},
	{"dark-compare", filepath.Join(k8sDir, "dark", "compare.yml"), []string{"clusters", "primary"}, "hotpair-a", ""},
	{"dark-compare", filepath.Join(k8sDir, "dark", "compare.yml"), []string{"clusters", "standby"}, "hotpair-b", ""},
	{"dark-compare", filepath.Join(k8sDir, "dark", "compare.yml"), []string{"dark_kafka"}, "hotpair-dark", "canary"},
	{"pipeline", filepath.Join(k8sDir, "dark", "pipeline", "pipeline.yml"), nil, "hotpair-dark", ""},
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
// returns the list it prints for one cluster: without a dark target the
// one list of a daemon's own clusters (a pipeline's, or a monitor's,
// a dispatcher's or a comparator's, the same on each live cluster); with
// one, the list for that dark target's cluster (--dark-target NAME).
func daemonACLs(t *testing.T, kind, file, darkTarget string) []strimziACL {
	t.Helper()
	args := []string{"config", "acls", "--kind", kind, "--format", "strimzi"}
	if darkTarget != "" {
		args = append(args, "--dark-target", darkTarget)
	}
	args = append(args, file)
	var out, errOut bytes.Buffer
	cmd := exec.Command(hotpairBin(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("hotpair %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	// One list per "# KIND FILE: on CLUSTER" header.
	var lists [][]byte
	var headers []string
	for _, l := range strings.SplitAfter(out.String(), "\n") {
		if strings.HasPrefix(l, "# ") {
			headers = append(headers, strings.TrimSpace(l))
			lists = append(lists, nil)
			continue
		}
		if len(lists) > 0 {
			lists[len(lists)-1] = append(lists[len(lists)-1], l...)
		}
	}
	pick := -1
	switch {
	case darkTarget == "" && len(headers) == 1:
		pick = 0
	case darkTarget != "":
		for i, h := range headers {
			if strings.HasSuffix(h, "on dark target "+darkTarget+"'s cluster") {
				if pick >= 0 {
					t.Fatalf("hotpair %s: two lists for the dark target %s\n%s", strings.Join(args, " "), darkTarget, out.String())
				}
				pick = i
			}
		}
	}
	if pick < 0 {
		t.Fatalf("hotpair %s: lists %q, want one (for the dark target %q)\n%s", strings.Join(args, " "), headers, darkTarget, out.String())
	}
	j, err := yaml.YAMLToJSON(lists[pick])
	if err != nil {
		t.Fatalf("hotpair %s: not YAML: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	acls, err := decodeACLs(j)
	if err != nil || len(acls) == 0 {
		t.Fatalf("hotpair %s: not a Strimzi acls list (%v)\n%s", strings.Join(args, " "), err, out.String())
	}
	return acls
}

// configValue is the value of a YAML config at the path of keys (nil if
// any is missing).
func configValue(t *testing.T, file string, path ...string) any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// saslUsername is the sasl.username a config names, at the path of keys.
func saslUsername(t *testing.T, file string, path ...string) string {
	t.Helper()
	p := append(slices.Clone(path), "sasl", "username")
	s, _ := configValue(t, file, p...).(string)
	if s == "" {
		t.Fatalf("%s: no %s", file, strings.Join(p, "."))
	}
	return s
}

// Kafka authorization is on in every Strimzi cluster (both sides' and the
// dark canary's), and each hotpair daemon is its own KafkaUser on each
// cluster it reaches, holding exactly the ACLs the binary derives from its
// config (`hotpair config acls --format strimzi [--dark-target NAME]`): a
// daemon given a topic, group or setting that needs another grant fails
// this test until its KafkaUser is updated, and so does a grant no daemon
// needs. Every block of the daemon table (kafkaClients) names with its
// sasl.username a KafkaUser of its own cluster; no user serves two
// daemons; no user is left over.
func TestStrimziUsersHoldTheirDaemonsACLs(t *testing.T) {
	objs := strimziObjects(t)
	seen := map[string]string{} // kind namespace/name → file: one object each
	for _, o := range objs {
		id := o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
		if f, dup := seen[id]; dup {
			t.Errorf("%s is in %s and %s: one object, the second apply overwrites the first", id, f, o.File)
		}
		seen[id] = o.File
	}
	clusters := strimziClusters(t, objs)
	for name, c := range clusters {
		if a := c.kafka.Spec.Kafka.Authorization; a == nil || a.Type != "simple" {
			t.Errorf("%s: Kafka %s has no authorization: simple; without it the users' ACLs are not enforced", c.kafka.File, name)
		} else if len(a.SuperUsers) > 0 {
			t.Errorf("%s: superUsers %v bypass every ACL; no hotpair daemon needs that", c.kafka.File, a.SuperUsers)
		}
	}
	served := map[string]string{} // cluster/user → the block it serves
	for _, d := range kafkaClients {
		c := clusters[d.cluster]
		if c == nil {
			t.Errorf("%s: no Strimzi Kafka %s", d, d.cluster)
			continue
		}
		user := saslUsername(t, d.config, d.block...)
		u, ok := c.users[user]
		if !ok {
			t.Errorf("%s: sasl.username %q names no KafkaUser of the cluster %s", d, user, d.cluster)
			continue
		}
		if other, dup := served[d.cluster+"/"+user]; dup {
			t.Errorf("%s and %s share the KafkaUser %s: each daemon its own user, with its own ACLs", other, d, user)
		}
		served[d.cluster+"/"+user] = d.String()
		if ls := c.kafka.Spec.Kafka.Listeners; u.Spec.Authentication == nil || len(ls) == 0 || ls[0].Authentication == nil ||
			u.Spec.Authentication.Type != ls[0].Authentication.Type {
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
		if diff := aclDiff(daemonACLs(t, d.kind, d.config, d.darkTarget), have); diff != "" {
			target := ""
			if d.darkTarget != "" {
				target = " --dark-target " + d.darkTarget
			}
			t.Errorf("KafkaUser %s (%s) does not hold what `hotpair config acls --format strimzi%s %s` prints for it:%s",
				u.Metadata.Name, u.File, target, d.config, diff)
		}
	}
	for name, c := range clusters {
		for user, u := range c.users {
			if served[name+"/"+user] == "" {
				t.Errorf("KafkaUser %s (%s) serves no daemon's config", u.Metadata.Name, u.File)
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
	before := daemonACLs(t, "pipeline", filepath.Join(k8sDir, "overlays", "primary", "pipeline.yml"), "")
	diff := aclDiff(daemonACLs(t, "pipeline", moved, ""), before)
	if !strings.Contains(diff, "missing:") || !strings.Contains(diff, "allow Read on topic ads.ad-events (literal)") || !strings.Contains(diff, "not needed:") {
		t.Fatalf("a pipeline with renamed topics passed the comparison: %q", diff)
	}
	if diff := aclDiff(before, before[1:]); !strings.Contains(diff, "missing") {
		t.Fatalf("a list without its first rule passed the comparison: %q", diff)
	}
	// And the dark target's list is the target's: another target's
	// dispatcher grants are other topics.
	dispatch := filepath.Join(k8sDir, "dark", "dispatch.yml")
	diff = aclDiff(daemonACLs(t, "dark-dispatch", dispatch, "other"), daemonACLs(t, "dark-dispatch", dispatch, "canary"))
	if !strings.Contains(diff, "allow Write on topic dark.other.ad-events (literal)") {
		t.Fatalf("another dark target's grants passed the comparison: %q", diff)
	}
}
