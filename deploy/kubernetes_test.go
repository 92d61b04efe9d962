package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const k8sDir = "kubernetes"

// k8sScheme knows the kinds the manifests use.
var k8sScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// strictDecoder decodes Kubernetes objects into their k8s.io/api types and
// fails on an unknown or misspelled field, as `kubectl apply
// --validate=strict` would.
var strictDecoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, k8sScheme, k8sScheme,
	json.SerializerOptions{Yaml: true, Strict: true})

// documents splits a multi-document YAML stream.
func documents(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			out = append(out, doc)
		}
	}
}

func stripComments(b []byte) []byte {
	var keep [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			keep = append(keep, l)
		}
	}
	return bytes.Join(keep, []byte("\n"))
}

func decodeStrict(t *testing.T, what string, doc []byte) runtime.Object {
	t.Helper()
	obj, gvk, err := strictDecoder.Decode(doc, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if gvk.Kind == "" {
		t.Fatalf("%s: no kind", what)
	}
	return obj
}

// Every plain manifest decodes strictly into the k8s.io/api types; a typo
// in a field name fails (the test proves it on a copy with one).
func TestManifestsDecodeStrictly(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(k8sDir, "*", "*.yaml"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "kustomization.yaml") || strings.Contains(f, "strimzi") || strings.Contains(f, "rollout") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documents(t, b) {
			decodeStrict(t, fmt.Sprintf("%s document %d", f, i+1), doc)
			n++
		}
	}
	if n < 10 {
		t.Fatalf("only %d manifests decoded", n)
	}
	typo := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 3\n")
	if _, _, err := strictDecoder.Decode(typo, nil, nil); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("a misspelled field was accepted: %v", err)
	}
}

// built is the output of a kustomize build, decoded.
type built struct {
	objs       []runtime.Object
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func kustomizeBuild(t *testing.T, dir string) built {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	b := built{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for i, doc := range documents(t, out) {
		obj := decodeStrict(t, fmt.Sprintf("kustomize build %s, object %d", dir, i+1), doc)
		b.objs = append(b.objs, obj)
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			b.configMaps[o.Name] = o
		case *corev1.Secret:
			b.secrets[o.Name] = o
		}
	}
	return b
}

// The overlays build, and the whole build holds one pipeline StatefulSet per
// side (each on its own cluster, with persistent state, /readyz readiness,
// a startupProbe and a PDB), three monitors with a PDB, and selectord.
func TestKustomizeBuilds(t *testing.T) {
	for _, dir := range []string{"base", "overlays/primary", "overlays/standby"} {
		kustomizeBuild(t, filepath.Join(k8sDir, dir))
	}
	all := kustomizeBuild(t, k8sDir)
	var sets []*appsv1.StatefulSet
	var deps []*appsv1.Deployment
	var pdbs []*policyv1.PodDisruptionBudget
	var svcs []*corev1.Service
	for _, o := range all.objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			sets = append(sets, o)
		case *appsv1.Deployment:
			deps = append(deps, o)
		case *policyv1.PodDisruptionBudget:
			pdbs = append(pdbs, o)
		case *corev1.Service:
			svcs = append(svcs, o)
		}
	}
	if len(sets) != 2 || len(deps) != 2 {
		t.Fatalf("%d StatefulSets and %d Deployments, want 2 (a pipeline per side) and 2 (monitor, selectord)", len(sets), len(deps))
	}
	sides := map[string]string{}
	for _, s := range sets {
		side := s.Spec.Template.Labels["hotpair.io/side"]
		c := s.Spec.Template.Spec.Containers[0]
		if side == "" || s.Spec.Selector.MatchLabels["hotpair.io/side"] != side {
			t.Errorf("%s: the pods and selector carry no side label", s.Name)
		}
		if len(s.Spec.VolumeClaimTemplates) != 1 || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == s.Spec.VolumeClaimTemplates[0].Name && m.MountPath == "/var/lib/hotpair"
		}) {
			t.Errorf("%s: no persistent volume at /var/lib/hotpair", s.Name)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
			c.StartupProbe == nil || c.StartupProbe.FailureThreshold*c.StartupProbe.PeriodSeconds < 600 {
			t.Errorf("%s: want readiness from /readyz and a startupProbe allowing at least 10 minutes of recovery", s.Name)
		}
		sides[side] = s.Name
		checkPDB(t, pdbs, s.Name, s.Spec.Template.Labels)
	}
	if len(sides) != 2 || sides["primary"] == "" || sides["standby"] == "" {
		t.Fatalf("pipelines per side: %v", sides)
	}
	for _, d := range deps {
		if d.Name == "hotpair-monitor" && (d.Spec.Replicas == nil || *d.Spec.Replicas != 3) {
			t.Errorf("monitors: want 3 replicas")
		}
		checkPDB(t, pdbs, d.Name, d.Spec.Template.Labels)
	}
	for _, s := range svcs {
		if !slices.ContainsFunc(podLabels(all.objs), func(l map[string]string) bool { return selects(s.Spec.Selector, l) }) {
			t.Errorf("service %s selects no pods", s.Name)
		}
	}
}

// podLabels are the pod template labels of every workload in objs.
func podLabels(objs []runtime.Object) []map[string]string {
	var out []map[string]string
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			out = append(out, o.Spec.Template.Labels)
		case *appsv1.Deployment:
			out = append(out, o.Spec.Template.Labels)
		}
	}
	return out
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func checkPDB(t *testing.T, pdbs []*policyv1.PodDisruptionBudget, workload string, labels map[string]string) {
	t.Helper()
	if !slices.ContainsFunc(pdbs, func(p *policyv1.PodDisruptionBudget) bool { return selects(p.Spec.Selector.MatchLabels, labels) }) {
		t.Errorf("%s: no PodDisruptionBudget selects its pods", workload)
	}
}

// Every container's command line, with the config and secrets it mounts,
// is accepted by the binary's own check (hotpair config check -- ARGS):
// the whole tree's and the dark canary's.
func TestContainersPassTheBinarysCheck(t *testing.T) {
	if n := checkContainers(t, kustomizeBuild(t, k8sDir)); n != 4 {
		t.Fatalf("checked %d containers, want 4 (two pipelines, monitor, selectord)", n)
	}
	if n := checkContainers(t, kustomizeBuild(t, filepath.Join(k8sDir, "dark"))); n != 3 {
		t.Fatalf("checked %d containers of the dark canary, want 3 (dispatcher, dark pipeline, comparator)", n)
	}
}

// checkContainers lays out each container's mounted files and runs its
// args through `hotpair config check --`, and returns how many it checked.
func checkContainers(t *testing.T, all built) int {
	t.Helper()
	n := 0
	for _, o := range all.objs {
		var spec *corev1.PodSpec
		var name string
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			spec, name = &o.Spec.Template.Spec, o.Name
		case *appsv1.Deployment:
			spec, name = &o.Spec.Template.Spec, o.Name
		default:
			continue
		}
		for _, c := range spec.Containers {
			tree := newMountedTree(t)
			// reads is what names the files the container reads: its
			// arguments and its mounted configs; secrets, its mounted
			// Secret files.
			reads, secrets := strings.Join(c.Args, " "), []string(nil)
			for _, m := range c.VolumeMounts {
				for _, v := range spec.Volumes {
					if v.Name != m.Name {
						continue
					}
					for key, data := range volumeFiles(t, all, v) {
						if m.SubPath != "" && m.SubPath != key {
							continue
						}
						p := filepath.Join(m.MountPath, key)
						if m.SubPath != "" {
							p = m.MountPath
						}
						tree.add(t, p, data)
						if v.Secret != nil {
							secrets = append(secrets, p)
						} else {
							reads += "\n" + string(data)
						}
					}
				}
			}
			// Each daemon is its own Kafka user: a pod that mounted
			// another daemon's password could act as that daemon.
			for _, p := range secrets {
				if !strings.Contains(reads, p) {
					t.Errorf("%s/%s mounts the secret file %s, which neither its arguments nor its config name: mount only what it reads (the volume's items)", name, c.Name, p)
				}
			}
			tree.finish(t)
			args := make([]string, len(c.Args))
			for i, a := range c.Args {
				// The kubelet expands $(POD_NAME) from the env.
				args[i] = tree.rewrite(strings.ReplaceAll(a, "$(POD_NAME)", name+"-0"))
			}
			configCheck(t, name+"/"+c.Name, append([]string{"--"}, args...)...)
			n++
		}
	}
	return n
}

// volumeFiles returns the files a ConfigMap or Secret volume holds, by
// their paths in the volume: every key, or with items only those, at their
// paths (a key an item names must exist, as the kubelet requires).
func volumeFiles(t *testing.T, b built, v corev1.Volume) map[string][]byte {
	t.Helper()
	all := map[string][]byte{}
	var items []corev1.KeyToPath
	switch {
	case v.ConfigMap != nil:
		cm := b.configMaps[v.ConfigMap.Name]
		if cm == nil {
			t.Fatalf("volume %s: no ConfigMap %s in the build", v.Name, v.ConfigMap.Name)
		}
		for k, d := range cm.Data {
			all[k] = []byte(d)
		}
		items = v.ConfigMap.Items
	case v.Secret != nil:
		s := b.secrets[v.Secret.SecretName]
		if s == nil {
			t.Fatalf("volume %s: no Secret %s in the build", v.Name, v.Secret.SecretName)
		}
		for k, d := range s.StringData {
			all[k] = []byte(d)
		}
		for k, d := range s.Data {
			all[k] = d
		}
		items = v.Secret.Items
	}
	if len(items) == 0 {
		return all
	}
	out := map[string][]byte{}
	for _, it := range items {
		d, ok := all[it.Key]
		if !ok {
			t.Fatalf("volume %s: its items name the key %s, which is not in the build", v.Name, it.Key)
		}
		out[it.Path] = d
	}
	return out
}

// The Strimzi clusters' bootstrap addresses are what the daemons are
// configured with: every block of the daemon table (kafkaClients: each
// side's pipeline, the monitors, the dark canary's dispatcher, comparator
// and pipeline) names its own cluster's bootstrap, one cluster per side and
// one for the dark canary, each reached by some daemon, in the only API
// Strimzi serves since 1.0 (kafka.strimzi.io/v1: KRaft and node pools
// only). A dark target's block names no brokers: they are the target
// document's (TestDarkTargetDocument).
func TestStrimziClustersMatchTheConfigs(t *testing.T) {
	objs := strimziObjects(t)
	for _, o := range objs {
		if o.APIVersion != "kafka.strimzi.io/v1" {
			t.Errorf("%s %s (%s): apiVersion %q, want kafka.strimzi.io/v1 (Strimzi 1.0 removed v1beta2)", o.Kind, o.Metadata.Name, o.File, o.APIVersion)
		}
	}
	clusters := strimziClusters(t, objs)
	bootstraps := map[string]string{}
	for name, c := range clusters {
		if c.bootstrap == "" {
			t.Errorf("%s: want a listener", name)
			continue
		}
		rf, _ := c.kafka.Spec.Kafka.Config["default.replication.factor"].(float64)
		if c.nodes < int(rf) || rf < 3 {
			t.Errorf("%s: %d brokers cannot hold replication %g (want 3)", name, c.nodes, rf)
		}
		if other, dup := bootstraps[c.bootstrap]; dup {
			t.Errorf("%s and %s have one bootstrap %s", other, name, c.bootstrap)
		}
		bootstraps[c.bootstrap] = name
	}
	reached := map[string]bool{}
	for _, d := range kafkaClients {
		c := clusters[d.cluster]
		if c == nil {
			t.Errorf("%s: no Strimzi Kafka %s", d, d.cluster)
			continue
		}
		reached[d.cluster] = true
		brokers := configValue(t, d.config, append(slices.Clone(d.block), "brokers")...)
		if d.darkTarget != "" {
			if brokers != nil {
				t.Errorf("%s: brokers %v; a dark target's brokers are its document's", d, brokers)
			}
			continue
		}
		if l, _ := brokers.([]any); len(l) != 1 || l[0] != c.bootstrap {
			t.Errorf("%s: brokers %v, want its cluster's bootstrap [%s]", d, brokers, c.bootstrap)
		}
	}
	for name, c := range clusters {
		if !reached[name] {
			t.Errorf("Kafka %s (%s): no daemon of the table reaches it", name, c.kafka.File)
		}
	}
	if len(clusters) != 3 {
		t.Fatalf("%d Kafka clusters, want 3 (one per side, the dark canary's)", len(clusters))
	}
}

// The Argo Rollouts AnalysisTemplate and the Flagger webhook ask the
// monitor's Service for the gate with a valid question.
func TestRolloutToolsAskTheGate(t *testing.T) {
	all := kustomizeBuild(t, filepath.Join(k8sDir, "base"))
	var port int32
	for _, o := range all.objs {
		if s, ok := o.(*corev1.Service); ok && s.Name == "hotpair-monitor" {
			port = s.Spec.Ports[0].Port
		}
	}
	wantHost := fmt.Sprintf("hotpair-monitor.hotpair.svc:%d", port)
	check := func(what, raw string, args map[string]string) {
		for k, v := range args {
			raw = strings.ReplaceAll(raw, "{{args."+k+"}}", v)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		q := u.Query()
		held, err := time.ParseDuration(q.Get("held"))
		if u.Host != wantHost || u.Path != "/api/v1/gate" || (q.Get("side") != "primary" && q.Get("side") != "standby") || err != nil || held <= 0 {
			t.Errorf("%s asks %s, want http://%s/api/v1/gate?side=primary|standby&held=D", what, raw, wantHost)
		}
	}
	var argo struct {
		Kind string `json:"kind"`
		Spec struct {
			Args []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"args"`
			Metrics []struct {
				SuccessCondition string `json:"successCondition"`
				Provider         struct {
					Web struct {
						URL      string `json:"url"`
						JSONPath string `json:"jsonPath"`
					} `json:"web"`
				} `json:"provider"`
			} `json:"metrics"`
		} `json:"spec"`
	}
	b, _ := os.ReadFile(filepath.Join(k8sDir, "rollout", "argo-analysistemplate.yaml"))
	if err := yaml.Unmarshal(b, &argo); err != nil {
		t.Fatal(err)
	}
	if argo.Kind != "AnalysisTemplate" || len(argo.Spec.Metrics) != 1 || argo.Spec.Metrics[0].SuccessCondition != "result.ok == true" {
		t.Fatalf("AnalysisTemplate: %+v", argo)
	}
	args := map[string]string{"side": "standby"}
	for _, a := range argo.Spec.Args {
		if a.Value != "" {
			args[a.Name] = a.Value
		}
	}
	check("the AnalysisTemplate", argo.Spec.Metrics[0].Provider.Web.URL, args)
	if !strings.Contains(argo.Spec.Metrics[0].Provider.Web.URL, "always_200=true") {
		t.Error("the AnalysisTemplate must ask with always_200=true (Argo's web provider takes a 409 for an error)")
	}
	var canary struct {
		Spec struct {
			TargetRef struct{ Kind, Name string } `json:"targetRef"`
			Analysis  struct {
				Webhooks []struct {
					Type string `json:"type"`
					URL  string `json:"url"`
				} `json:"webhooks"`
			} `json:"analysis"`
		} `json:"spec"`
	}
	b, _ = os.ReadFile(filepath.Join(k8sDir, "rollout", "flagger-canary-webhook.yaml"))
	if err := yaml.Unmarshal(b, &canary); err != nil {
		t.Fatal(err)
	}
	if len(canary.Spec.Analysis.Webhooks) != 1 || canary.Spec.Analysis.Webhooks[0].Type != "confirm-promotion" {
		t.Fatalf("Flagger Canary: %+v", canary)
	}
	check("the Flagger webhook", canary.Spec.Analysis.Webhooks[0].URL, nil)
	if !strings.Contains(canary.Spec.TargetRef.Name, "standby") || !strings.Contains(canary.Spec.Analysis.Webhooks[0].URL, "side=standby") {
		t.Error("the Flagger Canary of the standby's pipelines must ask about the standby")
	}
	if canary.Spec.TargetRef.Kind != "Deployment" && canary.Spec.TargetRef.Kind != "DaemonSet" {
		t.Errorf("Flagger Canary targets a %s; Flagger manages only Deployments and DaemonSets", canary.Spec.TargetRef.Kind)
	}
}

// The StatefulSets' gate, a Job (an Argo CD PreSync hook): a valid Job whose
// command line `hotpair gate` accepts, asking ZooKeeper (the monitors'
// ensemble) about the standby. Run against no ZooKeeper, the binary must
// fail to reach it (exit 1), not refuse the arguments (exit 2).
func TestGateJobAsksZooKeeper(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(k8sDir, "rollout", "gate-presync-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job, ok := decodeStrict(t, "gate-presync-job.yaml", b).(*batchv1.Job)
	if !ok {
		t.Fatal("gate-presync-job.yaml is not a Job")
	}
	c := job.Spec.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "gate" || !slices.Contains(c.Args, "--side=standby") {
		t.Fatalf("the Job runs %q, want hotpair gate --side=standby …", c.Args)
	}
	mon, _ := os.ReadFile(filepath.Join(k8sDir, "base", "monitor.yml"))
	for _, a := range c.Args {
		if zk, ok := strings.CutPrefix(a, "--zk="); ok {
			for _, server := range strings.Split(zk, ",") {
				if !strings.Contains(string(mon), `"`+server+`"`) {
					t.Errorf("the Job asks ZooKeeper %s, which is not the monitors' ensemble", server)
				}
			}
		}
	}
	args := append(slices.Clone(c.Args), "--timeout=200ms")
	for i, a := range args {
		if strings.HasPrefix(a, "--zk=") {
			args[i] = "--zk=127.0.0.1:1" // nothing listens there
		}
	}
	var out bytes.Buffer
	cmd := exec.Command(hotpairBin(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("hotpair %s without ZooKeeper: %v (want exit 1, not reached)\n%s", strings.Join(args, " "), err, out.String())
	}
}
