package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// continued is a backslash that continues a command line on the next
// line, in a shell block or a YAML comment.
var continued = regexp.MustCompile(`\\\n[#\t ]*`)

// darkDir is the dark canary of the target canary, fed from the primary.
var darkDir = filepath.Join(k8sDir, "dark")

// listenPort is the port of a config's http.listen (":9490").
func listenPort(t *testing.T, file string) int32 {
	t.Helper()
	l, _ := configValue(t, file, "http", "listen").(string)
	_, p, err := net.SplitHostPort(l)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%s: http.listen %q is no HOST:PORT", file, l)
	}
	return int32(n)
}

// configDuration is a duration of a config at the path of keys, or def
// when the key is absent.
func configDuration(t *testing.T, file string, def time.Duration, path ...string) time.Duration {
	t.Helper()
	v := configValue(t, file, path...)
	if v == nil {
		return def
	}
	d, err := time.ParseDuration(fmt.Sprint(v))
	if err != nil {
		t.Fatalf("%s: %s: %v", file, strings.Join(path, "."), err)
	}
	return d
}

// probesHealth fails unless the container's readiness and liveness probes
// ask path on its http port, the port its config listens on.
func probesHealth(t *testing.T, what string, c corev1.Container, readiness string, port int32) {
	t.Helper()
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" && p.ContainerPort == port }) {
		t.Errorf("%s: no container port http %d (its config's http.listen)", what, port)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		want := "/healthz"
		if name == "readiness" {
			want = readiness
		}
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || (p.HTTPGet.Port.StrVal != "http" && p.HTTPGet.Port.IntVal != port) {
			t.Errorf("%s: want a %s probe GET %s on the http port", what, name, want)
		}
	}
}

// The dark canary builds on its own (kubectl apply -k kubernetes/dark) into
// exactly its three workloads: the dispatcher, a StatefulSet of two static
// group members named by their pods, probed on /healthz at its config's
// port, with a PDB allowing one down and a session timeout well under the
// comparator's grace; the dark pipeline of canary, a StatefulSet like the
// live ones (persistent state, /readyz, a startupProbe, a PDB) whose pods
// no live Service or PDB selects; the comparator, one replica behind a
// Service on its port. No Service or PDB of the whole tree or of the dark
// canary selects another workload's pods.
func TestDarkCanaryBuilds(t *testing.T) {
	kustomizeBuild(t, filepath.Join(darkDir, "pipeline"))
	dark := kustomizeBuild(t, darkDir)
	live := kustomizeBuild(t, k8sDir)
	dispatchCfg, compareCfg := filepath.Join(darkDir, "dispatch.yml"), filepath.Join(darkDir, "compare.yml")
	pipelineCfg := filepath.Join(darkDir, "pipeline", "pipeline.yml")

	var dispatch, pipe *appsv1.StatefulSet
	var compare *appsv1.Deployment
	var pdbs []*policyv1.PodDisruptionBudget
	var svcs []*corev1.Service
	for _, o := range dark.objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			switch args := strings.Join(o.Spec.Template.Spec.Containers[0].Args, " "); {
			case strings.HasPrefix(args, "dark dispatch ") && dispatch == nil:
				dispatch = o
			case strings.HasPrefix(args, "pipeline ") && pipe == nil:
				pipe = o
			default:
				t.Errorf("StatefulSet %s runs %q, want one dispatcher and one dark pipeline", o.Name, args)
			}
		case *appsv1.Deployment:
			if args := strings.Join(o.Spec.Template.Spec.Containers[0].Args, " "); !strings.HasPrefix(args, "dark compare ") || compare != nil {
				t.Errorf("Deployment %s runs %q, want one comparator", o.Name, args)
			}
			compare = o
		case *policyv1.PodDisruptionBudget:
			pdbs = append(pdbs, o)
		case *corev1.Service:
			svcs = append(svcs, o)
		}
		if spec := podSpec(o); spec != nil {
			for _, c := range spec.Containers {
				if c.Image == "hotpair" || c.Image == "" {
					t.Errorf("%s/%s: image %q, want the build's (kustomization.yaml images:)", objName(o), c.Name, c.Image)
				}
			}
		}
	}
	if dispatch == nil || pipe == nil || compare == nil {
		t.Fatalf("dispatcher %v, dark pipeline %v, comparator %v: want all three", dispatch != nil, pipe != nil, compare != nil)
	}

	// The dispatcher.
	c := dispatch.Spec.Template.Spec.Containers[0]
	if dispatch.Spec.Replicas == nil || *dispatch.Spec.Replicas != 2 {
		t.Errorf("%s: want 2 replicas", dispatch.Name)
	}
	if i := slices.Index(c.Args, "--group-instance-id"); (i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != "$(POD_NAME)") &&
		!slices.Contains(c.Args, "--group-instance-id=$(POD_NAME)") {
		t.Errorf("%s: args %q, want --group-instance-id $(POD_NAME): each replica a static member named by its pod", dispatch.Name, c.Args)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Errorf("%s: no env POD_NAME from the pod's metadata.name", dispatch.Name)
	}
	probesHealth(t, dispatch.Name, c, "/healthz", listenPort(t, dispatchCfg))
	checkPDBMaxUnavailable(t, pdbs, dispatch.Name, dispatch.Spec.Template.Labels)
	// A crashed replica's campaigns go uncopied for the session timeout:
	// well under the comparator's grace (settle + max_skew + 2 × interval),
	// or a good build is judged a regression (docs/dark.md, "Replicas").
	session := configDuration(t, dispatchCfg, 6*time.Second, "group_session_timeout")
	grace := configDuration(t, compareCfg, 2*time.Second, "settle") + configDuration(t, compareCfg, 5*time.Second, "max_skew") +
		2*configDuration(t, compareCfg, 5*time.Second, "interval")
	if 2*session > grace {
		t.Errorf("%s: group_session_timeout %v is not well under the comparator's grace %v (want at most half)", dispatchCfg, session, grace)
	}
	// A window that straddled the crash is closed on dark without the
	// copies the gap withheld; the comparator holds that difference until
	// the survivor's gap rows can withdraw it: a session timeout, gap_after
	// and the catch-up after the crash.
	gapAfter := configDuration(t, dispatchCfg, 3*time.Second, "gap_after")
	if hold := configDuration(t, compareCfg, 20*time.Second, "hold"); hold < 2*(session+gapAfter) {
		t.Errorf("%s: hold %v is under twice a replica's takeover (group_session_timeout %v + gap_after %v): a crash mid-window reads as a spend regression",
			compareCfg, hold, session, gapAfter)
	}
	if side, _ := configValue(t, dispatchCfg, "side").(string); side != "primary" {
		t.Errorf("%s: side %q, want primary (the canary is fed from the primary)", dispatchCfg, side)
	}

	// The dark pipeline.
	c = pipe.Spec.Template.Spec.Containers[0]
	if pipe.Spec.Template.Labels["hotpair.io/dark"] != "canary" || pipe.Spec.Selector.MatchLabels["hotpair.io/dark"] != "canary" {
		t.Errorf("%s: the pods and selector carry no hotpair.io/dark: canary", pipe.Name)
	}
	if side, ok := pipe.Spec.Template.Labels["hotpair.io/side"]; ok {
		t.Errorf("%s: its pods carry hotpair.io/side: %s, which the live side's Service and PDB select", pipe.Name, side)
	}
	if role, name := configValue(t, pipelineCfg, "role"), configValue(t, pipelineCfg, "dark_name"); role != "dark" || name != "canary" {
		t.Errorf("%s: role %v, dark_name %v, want dark and canary", pipelineCfg, role, name)
	}
	if len(pipe.Spec.VolumeClaimTemplates) != 1 || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == pipe.Spec.VolumeClaimTemplates[0].Name && m.MountPath == "/var/lib/hotpair"
	}) {
		t.Errorf("%s: no persistent volume at /var/lib/hotpair", pipe.Name)
	}
	if c.StartupProbe == nil || c.StartupProbe.FailureThreshold*c.StartupProbe.PeriodSeconds < 600 {
		t.Errorf("%s: want a startupProbe allowing at least 10 minutes of recovery", pipe.Name)
	}
	probesHealth(t, pipe.Name, c, "/readyz", listenPort(t, pipelineCfg))
	checkPDBMaxUnavailable(t, pdbs, pipe.Name, pipe.Spec.Template.Labels)

	// The comparator.
	c = compare.Spec.Template.Spec.Containers[0]
	if compare.Spec.Replicas == nil || *compare.Spec.Replicas != 1 {
		t.Errorf("%s: want 1 replica", compare.Name)
	}
	port := listenPort(t, compareCfg)
	probesHealth(t, compare.Name, c, "/healthz", port)
	if !slices.ContainsFunc(svcs, func(s *corev1.Service) bool {
		return selects(s.Spec.Selector, compare.Spec.Template.Labels) &&
			slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port && p.TargetPort.StrVal == "http" })
	}) {
		t.Errorf("%s: no Service on its port %d", compare.Name, port)
	}

	// Every Service and PDB, of the whole tree and of the dark canary,
	// selects the pods of exactly one workload.
	everything := append(slices.Clone(live.objs), dark.objs...)
	for _, o := range everything {
		var sel map[string]string
		switch o := o.(type) {
		case *corev1.Service:
			sel = o.Spec.Selector
		case *policyv1.PodDisruptionBudget:
			sel = o.Spec.Selector.MatchLabels
		default:
			continue
		}
		var picked []string
		for _, w := range everything {
			if spec := podSpec(w); spec != nil && selects(sel, podTemplateLabels(w)) {
				picked = append(picked, objName(w))
			}
		}
		if len(picked) != 1 {
			t.Errorf("%s %s selects the pods of %v, want exactly one workload's", o.GetObjectKind().GroupVersionKind().Kind, objName(o), picked)
		}
	}
}

func checkPDBMaxUnavailable(t *testing.T, pdbs []*policyv1.PodDisruptionBudget, workload string, labels map[string]string) {
	t.Helper()
	if !slices.ContainsFunc(pdbs, func(p *policyv1.PodDisruptionBudget) bool {
		return selects(p.Spec.Selector.MatchLabels, labels) && p.Spec.MaxUnavailable != nil && p.Spec.MaxUnavailable.IntVal == 1
	}) {
		t.Errorf("%s: no PodDisruptionBudget with maxUnavailable: 1 selects its pods", workload)
	}
}

func podSpec(o runtime.Object) *corev1.PodSpec {
	switch o := o.(type) {
	case *appsv1.StatefulSet:
		return &o.Spec.Template.Spec
	case *appsv1.Deployment:
		return &o.Spec.Template.Spec
	}
	return nil
}

func podTemplateLabels(o runtime.Object) map[string]string {
	switch o := o.(type) {
	case *appsv1.StatefulSet:
		return o.Spec.Template.Labels
	case *appsv1.Deployment:
		return o.Spec.Template.Labels
	}
	return nil
}

func objName(o runtime.Object) string {
	if m, ok := o.(interface{ GetName() string }); ok {
		return m.GetName()
	}
	return fmt.Sprintf("%T", o)
}

// flagValues are the --name VALUE and --name=VALUE pairs of a command line.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		if n, v, eq := strings.Cut(name, "="); eq {
			out[n] = v
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			out[name] = args[i+1]
			i++
		} else {
			out[name] = ""
		}
	}
	return out
}

// The target document the dark canary needs, as deploy/README.md and
// dark/kustomization.yaml tell the operator to write it: `hotpair dark set
// canary` with the dark cluster's bootstrap as --brokers (the Kafka the
// daemon table's canary blocks reach), the dispatcher's side as --source,
// on the ZooKeeper ensemble of the monitors, which every dark daemon uses
// too. The binary accepts the command line: against no ZooKeeper it exits
// 1 (unreachable), not 2 (bad usage).
func TestDarkTargetDocument(t *testing.T) {
	clusters := strimziClusters(t, strimziObjects(t))
	bootstrap := ""
	for _, d := range kafkaClients {
		if d.darkTarget == "canary" && clusters[d.cluster] != nil {
			if bootstrap != "" && bootstrap != clusters[d.cluster].bootstrap {
				t.Fatalf("the daemons reach the target canary on two clusters, %s and %s", bootstrap, clusters[d.cluster].bootstrap)
			}
			bootstrap = clusters[d.cluster].bootstrap
		}
	}
	if bootstrap == "" {
		t.Fatal("no daemon of the table reaches the dark target canary")
	}
	if b := configValue(t, filepath.Join(darkDir, "pipeline", "pipeline.yml"), "brokers"); fmt.Sprint(b) != "["+bootstrap+"]" {
		t.Errorf("the dark pipeline's brokers %v are not the target's cluster %s", b, bootstrap)
	}
	monitor := filepath.Join(k8sDir, "base", "monitor.yml")
	zk := fmt.Sprint(configValue(t, monitor, "zk", "servers"))
	for _, f := range []string{"dispatch.yml", "compare.yml", filepath.Join("pipeline", "pipeline.yml")} {
		f = filepath.Join(darkDir, f)
		if s, root := fmt.Sprint(configValue(t, f, "zk", "servers")), configValue(t, f, "zk", "root"); s != zk || root != configValue(t, monitor, "zk", "root") {
			t.Errorf("%s: zk.servers %s, root %v, want the monitors' %s", f, s, root, zk)
		}
	}
	side := configValue(t, filepath.Join(darkDir, "dispatch.yml"), "side")

	n := 0
	for _, f := range []string{"README.md", filepath.Join(darkDir, "kustomization.yaml")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		// A command continued on the next line (a trailing backslash, in
		// a comment or not) is one line.
		text := continued.ReplaceAllString(string(b), " ")
		for _, l := range strings.Split(text, "\n") {
			_, cmdline, ok := strings.Cut(l, "hotpair dark set canary ")
			if !ok {
				continue
			}
			found = true
			n++
			args := append([]string{"dark", "set", "canary"}, strings.Fields(cmdline)...)
			flags := flagValues(args)
			if flags["brokers"] != bootstrap {
				t.Errorf("%s: %q: --brokers %q, want the dark cluster's bootstrap %s", f, l, flags["brokers"], bootstrap)
			}
			if src := cmpOr(flags["source"], "primary"); src != side {
				t.Errorf("%s: %q: the target's source %s is not the dispatcher's side %v", f, l, src, side)
			}
			for _, s := range strings.Split(flags["zk"], ",") {
				if !strings.Contains(zk, s) || s == "" {
					t.Errorf("%s: %q: --zk %q is not the monitors' ensemble %s", f, l, s, zk)
				}
			}
			for i, a := range args {
				if a == "--zk" {
					args[i+1] = "127.0.0.1:1" // nothing listens there
				}
			}
			args = append(args, "--timeout=200ms")
			var out bytes.Buffer
			cmd := exec.Command(hotpairBin(t), args...)
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("%s: hotpair %s without ZooKeeper: %v (want exit 1, not reached)\n%s", f, strings.Join(args, " "), err, out.String())
			}
		}
		if !found {
			t.Errorf("%s: no `hotpair dark set canary …` line", f)
		}
	}
}
