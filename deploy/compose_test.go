package deploy

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"
)

const composeDir = "compose"

// loadCompose parses compose.yaml with the compose-spec library, validating
// it against the Compose schema (an unknown key fails).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	abs, err := filepath.Abs(composeDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  abs,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(abs, "compose.yaml")}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("hotpair", true) })
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return p
}

func TestComposeParses(t *testing.T) {
	p := loadCompose(t)
	for _, want := range []string{"zk1", "zk2", "zk3", "kafka-a", "kafka-b", "pipeline-primary", "pipeline-standby",
		"monitor-1", "monitor-2", "selectord", "load-primary", "load-standby", "prometheus", "grafana"} {
		if _, ok := p.Services[want]; !ok {
			t.Errorf("no service %s", want)
		}
	}
	// The loader's schema check bites: a misspelled key fails.
	dir := t.TempDir()
	bad := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(bad, []byte("services:\n  a:\n    image: x\n    comand: [y]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{WorkingDir: dir,
		ConfigFiles: []types.ConfigFile{{Filename: bad}}, Environment: types.Mapping{}},
		func(o *loader.Options) { o.SetProjectName("x", true) })
	if err == nil || !strings.Contains(err.Error(), "comand") {
		t.Fatalf("a misspelled key was accepted: %v", err)
	}
}

// Every hotpair container's command line, with the files it mounts, is
// accepted by the binary's own check.
func TestComposeContainersPassTheBinarysCheck(t *testing.T) {
	p := loadCompose(t)
	n := 0
	for name, s := range p.Services {
		if s.Image != "hotpair:local" {
			continue
		}
		tree := newMountedTree(t)
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			mountHostPath(t, tree, v.Source, v.Target)
		}
		for _, sec := range s.Secrets {
			target := sec.Target
			if target == "" {
				target = "/run/secrets/" + sec.Source
			}
			mountHostPath(t, tree, p.Secrets[sec.Source].File, target)
		}
		tree.finish(t)
		args := make([]string, len(s.Command))
		for i, a := range s.Command {
			args[i] = tree.rewrite(a)
		}
		configCheck(t, name, append([]string{"--"}, args...)...)
		n++
	}
	if n < 9 {
		t.Fatalf("checked %d hotpair containers, want 9", n)
	}
}

func mountHostPath(t *testing.T, tree *mountedTree, src, target string) {
	t.Helper()
	st, err := os.Stat(src)
	if err != nil {
		t.Fatalf("mount source %s: %v", src, err)
	}
	if !st.IsDir() {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		tree.add(t, target, b)
		return
	}
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if !e.IsDir() {
			mountHostPath(t, tree, filepath.Join(src, e.Name()), target+"/"+e.Name())
		}
	}
}

// Addresses and ports agree: every broker and ZooKeeper server a config or
// command names is a service listening there; each side has its own Kafka
// cluster; published host ports are unique; every HTTP listener is the
// port Compose exposes and Prometheus scrapes.
func TestComposeAddressesAgree(t *testing.T) {
	p := loadCompose(t)
	listens := map[string]bool{} // host:port inside the Compose network
	secure := map[string]bool{}  // of those, the brokers' SASL_SSL listeners
	published := map[string]string{}
	for name, s := range p.Services {
		for _, port := range s.Ports {
			if other, dup := published[port.Published]; dup {
				t.Errorf("host port %s published by %s and %s", port.Published, other, name)
			}
			published[port.Published] = name
		}
		env := func(k string) string {
			if v := s.Environment[k]; v != nil {
				return *v
			}
			return ""
		}
		switch {
		case strings.HasPrefix(s.Image, "apache/kafka") && env("KAFKA_PROCESS_ROLES") != "":
			protocol := map[string]string{}
			for _, m := range strings.Split(env("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"), ",") {
				l, p, _ := strings.Cut(m, ":")
				protocol[l] = p
			}
			if env("KAFKA_SASL_ENABLED_MECHANISMS") != "SCRAM-SHA-512" {
				t.Errorf("%s: KAFKA_SASL_ENABLED_MECHANISMS=%q, want SCRAM-SHA-512", name, env("KAFKA_SASL_ENABLED_MECHANISMS"))
			}
			for _, l := range strings.Split(env("KAFKA_ADVERTISED_LISTENERS"), ",") {
				if lname, addr, ok := strings.Cut(l, "://"); ok && !strings.HasPrefix(addr, "localhost") {
					listens[addr] = true
					secure[addr] = protocol[lname] == "SASL_SSL"
					if h, _, _ := net.SplitHostPort(addr); h != name {
						t.Errorf("%s advertises %s, not its own name", name, addr)
					}
				}
			}
			for _, k := range []string{"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_DEFAULT_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"} {
				if env(k) != "1" {
					t.Errorf("%s: %s=%q on a one-broker cluster, want 1", name, k, env(k))
				}
			}
		case strings.HasPrefix(s.Image, "zookeeper"):
			listens[name+":2181"] = true
			id := env("ZOO_MY_ID")
			if !strings.Contains(env("ZOO_SERVERS"), "server."+id+"="+name+":2888:3888;2181") {
				t.Errorf("%s: ZOO_MY_ID %s is not its own entry in ZOO_SERVERS %q", name, id, env("ZOO_SERVERS"))
			}
		}
	}
	ids := map[string]string{}
	for _, k := range []string{"kafka-a", "kafka-b"} {
		id := *p.Services[k].Environment["CLUSTER_ID"]
		if other, dup := ids[id]; dup {
			t.Errorf("%s and %s share the cluster id %s", k, other, id)
		}
		ids[id] = k
	}

	type cfg struct {
		Side    string   `yaml:"side"`
		Brokers []string `yaml:"brokers"`
		Topics  struct {
			Replication int `yaml:"replication"`
		} `yaml:"topics"`
		ZK struct {
			Servers []string `yaml:"servers"`
		} `yaml:"zk"`
		Clusters struct {
			Primary, Standby struct {
				Brokers []string `yaml:"brokers"`
			}
		} `yaml:"clusters"`
		HTTP struct {
			Listen string `yaml:"listen"`
		} `yaml:"http"`
	}
	sideCluster := map[string]string{}
	for name, s := range p.Services {
		if s.Image != "hotpair:local" {
			continue
		}
		var c cfg
		for _, v := range s.Volumes {
			if strings.HasSuffix(v.Target, ".yml") {
				b, err := os.ReadFile(v.Source)
				if err != nil {
					t.Fatal(err)
				}
				if err := yaml.Unmarshal(b, &c); err != nil {
					t.Fatal(err)
				}
			}
		}
		addrs := append(append(append([]string{}, c.Brokers...), c.Clusters.Primary.Brokers...), c.Clusters.Standby.Brokers...)
		addrs = append(addrs, c.ZK.Servers...)
		for i, a := range s.Command {
			switch {
			case a == "--zk" && i+1 < len(s.Command):
				addrs = append(addrs, strings.Split(s.Command[i+1], ",")...)
			case a == "--target" && i+1 < len(s.Command):
				brokers, _, _ := strings.Cut(s.Command[i+1], "/")
				addrs = append(addrs, strings.Split(brokers, ",")...)
			}
		}
		for _, a := range addrs {
			if !listens[a] {
				t.Errorf("%s addresses %s, where no Compose service listens", name, a)
			}
		}
		kafkaAddrs := append(append(append([]string{}, c.Brokers...), c.Clusters.Primary.Brokers...), c.Clusters.Standby.Brokers...)
		for i, a := range s.Command {
			if a == "--target" && i+1 < len(s.Command) {
				brokers, _, _ := strings.Cut(s.Command[i+1], "/")
				kafkaAddrs = append(kafkaAddrs, strings.Split(brokers, ",")...)
			}
		}
		for _, a := range kafkaAddrs {
			if listens[a] && !secure[a] {
				t.Errorf("%s reaches Kafka at %s, which is no SASL_SSL listener: hotpair's clients connect with TLS and SCRAM", name, a)
			}
		}
		if c.Side != "" {
			sideCluster[c.Side] = strings.Join(c.Brokers, ",")
			if c.Topics.Replication != 1 {
				t.Errorf("%s: topics.replication %d on a one-broker cluster", name, c.Topics.Replication)
			}
		}
		if len(c.Clusters.Primary.Brokers) > 0 && (strings.Join(c.Clusters.Primary.Brokers, ",") != sideCluster["primary"] && sideCluster["primary"] != "") {
			t.Errorf("%s: the monitor's primary cluster differs from the primary pipeline's", name)
		}
		if c.HTTP.Listen != "" {
			_, port, _ := net.SplitHostPort(c.HTTP.Listen)
			if !slices.ContainsFunc(s.Ports, func(pc types.ServicePortConfig) bool { return strconv.Itoa(int(pc.Target)) == port }) {
				t.Errorf("%s listens on %s, which Compose does not expose", name, c.HTTP.Listen)
			}
			listens[fmt.Sprintf("%s:%s", name, port)] = true
		}
		for i, a := range s.Command {
			if a == "--http" && i+1 < len(s.Command) {
				_, port, _ := net.SplitHostPort(s.Command[i+1])
				listens[fmt.Sprintf("%s:%s", name, port)] = true
			}
		}
	}
	if sideCluster["primary"] == "" || sideCluster["primary"] == sideCluster["standby"] {
		t.Fatalf("pipelines' clusters: %v: want one Kafka cluster per side", sideCluster)
	}
	// Prometheus scrapes what listens.
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
		RuleFiles []string `yaml:"rule_files"`
	}
	b, err := os.ReadFile(filepath.Join(composeDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				n++
				if !listens[target] {
					t.Errorf("Prometheus scrapes %s, where nothing listens", target)
				}
			}
		}
	}
	if n < 7 {
		t.Errorf("Prometheus scrapes %d targets, want every hotpair process", n)
	}
	mounted := map[string]bool{}
	for _, v := range p.Services["prometheus"].Volumes {
		mounted[v.Target] = true
	}
	for _, rf := range prom.RuleFiles {
		if !mounted[rf] {
			t.Errorf("rule file %s is not mounted into Prometheus", rf)
		}
	}
	// Grafana's provisioning points at the mounted dashboard.
	var dash struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	b, _ = os.ReadFile(filepath.Join(composeDir, "grafana", "provisioning", "dashboards", "hotpair.yml"))
	if err := yaml.Unmarshal(b, &dash); err != nil || len(dash.Providers) != 1 {
		t.Fatalf("dashboard provisioning: %v", err)
	}
	var dashSrc string
	for _, v := range p.Services["grafana"].Volumes {
		if v.Target == dash.Providers[0].Options.Path {
			dashSrc = v.Source
		}
	}
	if _, err := os.Stat(filepath.Join(dashSrc, "hotpair.json")); err != nil {
		t.Errorf("Grafana's dashboard path %s holds no hotpair.json: %v", dash.Providers[0].Options.Path, err)
	}
}
