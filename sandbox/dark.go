package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hotpair/hotpair/canary/dispatch"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/childproc"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/internal/zkutil"
	"github.com/hotpair/hotpair/monitor"
)

// DarkName is the sandbox's dark target: its topics and groups start with
// contract.DarkPrefix(DarkName) on the dark cluster.
const DarkName = "canary"

// darkCluster names the dark target's cluster among the sandbox's clusters.
const darkCluster = "dark"

// darkRun is the dark target: its pipeline, a separate process of
// Options.DarkBinary as a candidate build runs in production, and the
// dispatcher that feeds it.
type darkRun struct {
	proc     *childproc.Proc
	httpAddr string // its /metrics
	config   string // the config file it was started with
	// zk reads the registrations and writes the target document, as the
	// operator while ACLs are on.
	zk       *zkutil.Session
	dispatch *dispatch.Dispatcher
	// stopDispatch stops the dispatcher cleanly and waits (idempotent).
	stopDispatch func()
	// replicas are the other dispatcher replicas (Options.DarkDispatchers)
	// not crashed; replicasStarted says they were started (once).
	replicas        []dispatcherReplica
	replicasStarted bool
}

// dispatcherReplica is a dispatcher replica beyond the first.
type dispatcherReplica struct {
	id   string // its group instance id, also its metrics' replica label
	stop func()
}

// darkDispatchGroup is the sandbox dispatcher's consumer group on the
// primary cluster (the default for its side).
var darkDispatchGroup = "hotpair-dark-dispatch-" + contract.Primary.String()

// startDark starts the dark pipeline process against the dark cluster,
// waits until each of its stages has registered under
// instances/dark/<DarkName> (or it exits, which is an error with its log),
// then starts the dispatcher that feeds it.
func (s *Sandbox) startDark(ctx context.Context) error {
	if !s.opts.Dark {
		return nil
	}
	addr, err := childproc.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(s.dir, "dark-pipeline.yml")
	b, err := yaml.Marshal(s.darkPipelineConfig(addr))
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return err
	}
	sess, err := zkutil.Open(zkutil.Options{Servers: []string{s.zkAddr}, SessionTimeout: s.opts.Timing.ZKSession,
		Auth: s.operatorCreds, Logger: s.log})
	if err != nil {
		return err
	}
	s.onStop(sess.Close)
	proc, err := childproc.Start("dark pipeline", s.opts.DarkBinary, filepath.Join(s.dir, "dark-pipeline.log"),
		"pipeline", "--config", cfgPath)
	if err != nil {
		return err
	}
	s.onStop(func() { proc.Stop(15 * time.Second) })
	s.mu.Lock()
	s.dark = &darkRun{proc: proc, httpAddr: addr, config: cfgPath, zk: sess}
	s.mu.Unlock()
	s.log.Info("sandbox: dark pipeline started", "binary", s.opts.DarkBinary, "config", cfgPath, "log", proc.LogPath)
	var exited error
	err = s.waitUntil(ctx, time.Minute, "the dark pipeline registered", func() bool {
		if exited = proc.Alive(); exited != nil {
			return true
		}
		return len(s.darkRegistrations()) == len(contract.Stages())
	})
	if exited != nil {
		return exited
	}
	if err != nil {
		return err
	}
	if err := s.startDispatcher(); err != nil {
		return err
	}
	return s.waitDispatchersShare(ctx)
}

// waitDispatchersShare waits, with several dispatcher replicas, until their
// group is stable with every replica holding live partitions (as many as
// there are partitions, with more replicas than that): the
// rebalances of their start are over before the load generator writes, so
// no record waits for one (a copy that waited gap_after would be a gap).
func (s *Sandbox) waitDispatchersShare(ctx context.Context) error {
	n := s.opts.DarkDispatchers
	if n <= 1 {
		return nil
	}
	cl, err := kafka.NewClient(kafka.Cluster{Brokers: s.clusters[contract.Primary.String()].brokers(), Auth: s.kafkaAuth()}, "sandbox-dispatch-group")
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adEvents := contract.TopicsWithPrefix("").AdEvents
	return s.waitUntil(ctx, time.Minute, fmt.Sprintf("the %d dispatcher replicas sharing the live partitions", n), func() bool {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(dctx, darkDispatchGroup)
		if err != nil || gs.Error() != nil {
			return false
		}
		g := gs[darkDispatchGroup]
		if g.State != "Stable" || len(g.Members) != n {
			return false
		}
		holding := 0
		for _, m := range g.Members {
			a, ok := m.Assigned.AsConsumer()
			if ok && slices.ContainsFunc(a.Topics, func(t kmsg.ConsumerMemberAssignmentTopic) bool {
				return t.Topic == adEvents && len(t.Partitions) > 0
			}) {
				holding++
			}
		}
		return holding == min(n, int(s.opts.Partitions))
	})
}

// setDarkTarget writes the target document as the operator, enabled or
// not (hotpair dark set [--disable]).
func (s *Sandbox) setDarkTarget(enabled bool) error {
	target := contract.DarkTarget{V: contract.ZNodeVersion, Name: DarkName, Source: contract.Primary,
		Strategy: contract.DarkRelative, Multiplier: s.opts.DarkMultiplier, Brokers: s.clusters[darkCluster].brokers(),
		Prefix: contract.DarkPrefix(DarkName), Enabled: enabled, UpdatedBy: "sandbox", UpdatedAt: time.Now().UTC()}
	if err := dispatch.SetTarget(s.dark.zk.Conn(), contract.NewPaths(s.opts.ZKRoot), monitor.OperatorPolicy(s.operatorCreds), target); err != nil {
		return fmt.Errorf("the dark target document: %w", err)
	}
	return nil
}

// startDispatcher writes the target document (relative, the primary's
// input, Options.DarkMultiplier) as the operator and runs the dispatcher
// that copies the sampled campaigns of the primary's input to the dark
// cluster. It reads ad-events from the start: it starts before the load
// generator, so the dark pipeline sees its campaigns' whole history, which
// keeps their state comparable with live.
func (s *Sandbox) startDispatcher() error {
	if err := s.setDarkTarget(true); err != nil {
		return err
	}
	return s.runDispatcher()
}

// runDispatcher starts a dispatcher process's worth: a new Dispatcher, its
// metrics in a registry of their own (a restarted one counts from zero).
// With Options.DarkDispatchers above one it also starts the other replicas
// (the first time only), each a static member of the group whose series
// carry a replica label.
func (s *Sandbox) runDispatcher() error {
	d := s.dark
	replicas := s.opts.DarkDispatchers
	disp, err := s.newDispatcher(replicaID(1, replicas))
	if err != nil {
		return err
	}
	stop := s.goRun("dark dispatcher", disp.Run)
	s.mu.Lock()
	d.dispatch, d.stopDispatch = disp, stop
	started := d.replicasStarted
	d.replicasStarted = true
	s.mu.Unlock()
	for i := 2; i <= replicas && !started; i++ {
		id := replicaID(i, replicas)
		r, err := s.newDispatcher(id)
		if err != nil {
			return err
		}
		stop := s.goRun("dark dispatcher "+id, r.Run)
		s.mu.Lock()
		d.replicas = append(d.replicas, dispatcherReplica{id: id, stop: stop})
		s.mu.Unlock()
	}
	return nil
}

// replicaID is dispatcher replica i's group instance id, none when it is
// the only one.
func replicaID(i, replicas int) string {
	if replicas <= 1 {
		return ""
	}
	return fmt.Sprintf("sandbox-dispatch-%d", i)
}

// dispatcherSessionTimeout is the group session timeout of the sandbox's
// dispatcher replicas when there are several: twice the aggregator's
// lateness, at least 1 s. As production's default 6 s is longer than the
// default 5 s lateness, the copies a crashed replica's partitions resume
// with come late to the dark aggregator, whose clock the other replica's
// copies moved on; and it stays within the comparator's missing grace
// (docs/dark.md, "Replicas").
func dispatcherSessionTimeout(t Timing) time.Duration {
	return max(time.Second, 2*t.AggLateness)
}

// dispatcherGapAfter is the dispatchers' gap_after: half their session
// timeout, so that a takeover after a crash is a gap and a clean
// rebalance is not.
func dispatcherGapAfter(t Timing) time.Duration { return dispatcherSessionTimeout(t) / 2 }

func (s *Sandbox) newDispatcher(id string) (*dispatch.Dispatcher, error) {
	primary := s.clusters[contract.Primary.String()]
	c := dispatch.Config{ZK: []string{s.zkAddr}, ZKRoot: s.opts.ZKRoot, ZKSessionTimeout: s.opts.Timing.ZKSession,
		Side: contract.Primary, LiveBrokers: primary.brokers(), LiveAuth: s.kafkaAuth(), TargetAuth: s.kafkaAuth(),
		Group: darkDispatchGroup, Start: dispatch.StartOldest, DeliveryTimeout: darkDeliveryTimeout(s.opts.Timing),
		GapAfter: dispatcherGapAfter(s.opts.Timing)}
	if id == "" {
		return dispatch.New(c, dispatch.WithLogger(s.log), dispatch.WithRegisterer(s.regs.add("dark-dispatch")))
	}
	c.GroupInstanceID, c.GroupSessionTimeout = id, dispatcherSessionTimeout(s.opts.Timing)
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"replica": id}, s.regs.add(dispatcherRegistry(id)))
	return dispatch.New(c, dispatch.WithLogger(s.log.With("replica", id)), dispatch.WithRegisterer(reg))
}

// dispatcherRegistry names dispatcher replica id's metrics registry.
func dispatcherRegistry(id string) string { return "dark-dispatch " + id }

// crashDispatcherReplica kills the last dispatcher replica as a crash
// does: it stops without leaving the group (a static member), so its
// partitions are not copied until the group's session timeout moves them
// to the other replicas. It returns that replica's id.
func (s *Sandbox) crashDispatcherReplica() (string, error) {
	s.mu.Lock()
	d := s.dark
	var r dispatcherReplica
	if d != nil && len(d.replicas) > 0 {
		r = d.replicas[len(d.replicas)-1]
		d.replicas = d.replicas[:len(d.replicas)-1]
	}
	s.mu.Unlock()
	if r.stop == nil {
		return "", fmt.Errorf("%w: crash-dispatcher-replica needs a dark target with two dispatcher replicas or more, one of them not crashed yet", ErrBadFault)
	}
	r.stop()
	s.regs.remove(dispatcherRegistry(r.id)) // its series go with it
	return r.id, nil
}

// crashDispatcher stops the dispatcher as a crash does (runDispatcher
// starts a new one): its group's offsets go back to the first live record
// newer than uncommitted before the stop, as if nothing it read since had
// been committed (franz-go commits every few seconds). Its copies of those
// records are on the target already; what a crash also loses — copies
// still buffered for the target — is not lost here. It returns how many
// records per partition, at most, the group went back.
func (s *Sandbox) crashDispatcher(ctx context.Context, uncommitted time.Duration) (int64, error) {
	s.mu.Lock()
	d := s.dark
	s.mu.Unlock()
	if d == nil || d.stopDispatch == nil {
		return 0, fmt.Errorf("%w: crash-dispatcher needs a dark target (hotpair sandbox --dark)", ErrBadFault)
	}
	since := time.Now().Add(-uncommitted)
	d.stopDispatch()
	cl, err := kafka.NewClient(kafka.Cluster{Brokers: s.clusters[contract.Primary.String()].brokers(), Auth: s.kafkaAuth()}, "sandbox-crash-dispatcher")
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	committed, err := adm.FetchOffsets(ctx, darkDispatchGroup)
	if err == nil {
		err = committed.Error()
	}
	var back kadm.ListedOffsets
	if err == nil {
		back, err = adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), contract.TopicsWithPrefix("").AdEvents)
	}
	if err == nil {
		err = back.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("moving the dispatcher's offsets back: %w", err)
	}
	rewound, most := kadm.Offsets{}, int64(0)
	committed.Each(func(o kadm.OffsetResponse) {
		b, ok := back.Lookup(o.Topic, o.Partition)
		if !ok || b.Offset < 0 || b.Offset >= o.At {
			return
		}
		rewound.AddOffset(o.Topic, o.Partition, b.Offset, -1)
		most = max(most, o.At-b.Offset)
	})
	if len(rewound) > 0 {
		resp, err := adm.CommitOffsets(ctx, darkDispatchGroup, rewound)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return 0, fmt.Errorf("moving the dispatcher's offsets back: %w", err)
		}
	}
	return most, nil
}

// darkDeliveryTimeout is how long the sandbox's dispatcher lets a copy
// wait for the dark target before it counts as dropped: five aggregator
// windows (30 s by default), so a dark target that goes away shows in the
// dispatcher's drops within a scenario's time.
func darkDeliveryTimeout(t Timing) time.Duration { return 5 * t.AggWindow }

// darkPipelineConfig is the dark pipeline's YAML config (docs/pipeline.md):
// role dark on the dark cluster, the sandbox's timing, memory state.
func (s *Sandbox) darkPipelineConfig(httpAddr string) map[string]any {
	t := s.opts.Timing
	c := map[string]any{
		"side": contract.Primary.String(), "role": contract.RoleDark.String(), "dark_name": DarkName,
		"instance": "sandbox-dark", "brokers": s.clusters[darkCluster].brokers(),
		"topics":     map[string]any{"partitions": s.opts.Partitions, "replication": 1, "create": true},
		"storage":    map[string]any{"backend": "memory"},
		"group":      map[string]any{"hot_standby": true},
		"aggregator": map[string]any{"window": t.AggWindow.String(), "lateness": t.AggLateness.String(), "idle_close": t.AggWindow.String()},
		"health":     map[string]any{"sample_interval": t.SampleInterval.String()},
		"http":       map[string]any{"listen": httpAddr},
		"zk":         map[string]any{"servers": []string{s.zkAddr}, "root": s.opts.ZKRoot},
	}
	if sec := s.kafkaSec; sec != nil { // as an operator configures it: files
		k := sec.Security(s.kafkaCAFile(), s.kafkaPasswordFile())
		c["tls"] = map[string]any{"enabled": true, "ca_file": k.TLS.CAFile}
		c["sasl"] = map[string]any{"mechanism": k.SASL.Mechanism, "username": k.SASL.Username, "password_file": k.SASL.PasswordFile}
	}
	return c
}

// darkRegistrations are the dark pipeline instances registered in
// ZooKeeper, by stage (none without --dark or before it started).
func (s *Sandbox) darkRegistrations() []contract.Registration {
	s.mu.Lock()
	d := s.dark
	s.mu.Unlock()
	if d == nil {
		return nil
	}
	regs, err := monitor.ReadRegistrations(d.zk.Conn(), contract.NewPaths(s.opts.ZKRoot))
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(regs, func(r contract.Registration) bool { return r.Role != contract.RoleDark })
}

// DarkState is the dark target as the sandbox's API shows it.
type DarkState struct {
	Name    string   `json:"name"`
	Prefix  string   `json:"prefix"`
	Brokers []string `json:"brokers"`
	// Pipeline is "running" or how its process ended.
	Pipeline string `json:"pipeline"`
	Metrics  string `json:"metrics"`
	Log      string `json:"log"`
	// Config is the file the dark pipeline was started with.
	Config string `json:"config"`
	// Registered lists stage/instance of each registration under
	// instances/dark/<name>.
	Registered []string `json:"registered"`
	// Dispatch is the dispatcher's plan for the target: the sampled
	// fraction, or why it sends nothing.
	Dispatch *DarkDispatch `json:"dispatch,omitempty"`
}

// DarkDispatch is the dispatcher's current plan for the sandbox's target.
type DarkDispatch struct {
	Strategy   string  `json:"strategy"`
	Multiplier float64 `json:"multiplier"`
	// Fraction is the sampled fraction of campaigns (multiplier × dark
	// instances / live instances for the relative strategy).
	Fraction  float64 `json:"fraction"`
	Sending   bool    `json:"sending"`
	Paused    string  `json:"paused,omitempty"`
	LiveCount int     `json:"live_instances"`
	DarkCount int     `json:"dark_instances"`
}

// darkState returns the dark target's state, nil without --dark.
func (s *Sandbox) darkState() *DarkState {
	s.mu.Lock()
	d := s.dark
	var disp *dispatch.Dispatcher
	if d != nil {
		disp = d.dispatch
	}
	s.mu.Unlock()
	if d == nil {
		return nil
	}
	st := &DarkState{Name: DarkName, Prefix: contract.DarkPrefix(DarkName), Brokers: s.clusters[darkCluster].brokers(),
		Pipeline: "running", Metrics: "http://" + d.httpAddr + "/metrics", Log: d.proc.LogPath, Config: d.config, Registered: []string{}}
	if err := d.proc.Alive(); err != nil {
		st.Pipeline, _, _ = strings.Cut(err.Error(), ";")
	}
	for _, r := range s.darkRegistrations() {
		st.Registered = append(st.Registered, fmt.Sprintf("%s/%s", r.Stage, r.Instance))
	}
	if disp != nil {
		for _, p := range disp.Plans() {
			if p.Name != DarkName {
				continue
			}
			st.Dispatch = &DarkDispatch{Strategy: string(contract.DarkRelative), Multiplier: s.opts.DarkMultiplier, Fraction: p.Fraction,
				Sending: p.Sending(), Paused: strings.TrimSpace(string(p.Paused) + " " + p.Detail), LiveCount: p.Live, DarkCount: p.Dark}
		}
	}
	return st
}
