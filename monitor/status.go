package monitor

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// Status is what `hotpair status`, /api/v1/status and the on-call page show.
type Status struct {
	Now  time.Time `json:"now"`
	Root string    `json:"root"`
	// Leader is the monitor replica that leads, as the election znodes say
	// (nil: no monitor is running). Only set when read from ZooKeeper.
	Leader     *Candidate `json:"leader,omitempty"`
	Candidates int        `json:"candidates"`
	// Replica is the answering monitor replica (nil from `hotpair status`).
	Replica  *ReplicaStatus  `json:"replica,omitempty"`
	Services []ServiceStatus `json:"services"`
	// Instances are the pipeline stage instances registered in ZooKeeper
	// (hotpair pipeline with zk.servers), by cluster and stage. Only set
	// when read from ZooKeeper.
	Instances []Registered `json:"instances,omitempty"`
}

// Registered lists the instances of one stage registered for one cluster.
type Registered struct {
	Cluster   string   `json:"cluster"`
	Stage     string   `json:"stage"`
	Instances []string `json:"instances"`
}

// Candidate is what a monitor replica writes into its election contract.
type Candidate struct {
	ID    string    `json:"id"`
	HTTP  string    `json:"http,omitempty"`
	Since time.Time `json:"since"`
}

// ReplicaStatus is one monitor replica's own state.
type ReplicaStatus struct {
	ID          string `json:"id"`
	Leader      bool   `json:"leader"`
	ZKConnected bool   `json:"zk_connected"`
	// Ready: connected to ZooKeeper and at least one window evaluated.
	Ready  bool   `json:"ready"`
	Window string `json:"window"`
	// LastEvaluation is the end of the last evaluated window (zero before the first).
	LastEvaluation time.Time `json:"last_evaluation"`
	// Steps counts the aggregation steps: one per health sample taken in.
	Steps uint64 `json:"aggregation_steps"`
	// Switches are the recent changes of the active side, newest first.
	Switches []Switch `json:"switches"`
}

// ServiceStatus is one service.
type ServiceStatus struct {
	Service contract.Service `json:"service"`
	// Selection is the decision as published in ZooKeeper (nil before the
	// first one). Its sides hold each side's verdict with its numbers.
	Selection *contract.Selection `json:"selection"`
	// Override is the service's override document, in force or ended.
	Override       *contract.Override `json:"override,omitempty"`
	OverrideActive bool               `json:"override_active"`
	// Local is the answering replica's own latest decision (replica only):
	// on a follower it can differ from the published one.
	Local *LocalDecision `json:"local,omitempty"`
	// History are the service's evaluation windows, oldest first (replica
	// only, and only for the on-call page).
	History []Point `json:"-"`
}

// LocalDecision is a replica's own latest decision for a service.
type LocalDecision struct {
	Active    contract.Side `json:"active"`
	Kind      string        `json:"kind"`
	Reason    string        `json:"reason"`
	Degraded  bool          `json:"degraded"`
	Epoch     int64         `json:"epoch"`
	DecidedAt time.Time     `json:"decided_at"`
	// Sides are this replica's verdicts of the last window, by side.
	Sides map[contract.Side]SideVerdict `json:"sides"`
	// StaggerViolation explains a staggered-deploy violation ("" if none).
	StaggerViolation string `json:"stagger_violation,omitempty"`
}

// SideVerdict is one side's verdict over one window, with its numbers: the
// same document as in the decision record.
type SideVerdict = decisions.Verdict

// ReadStatus reads the status of services straight from ZooKeeper: it works
// while every monitor is down.
func ReadStatus(conn *zk.Conn, paths contract.Paths, services []contract.Service, now time.Time) (Status, error) {
	st := Status{Now: now.UTC(), Root: paths.Root}
	data, n, err := leaderOf(conn, paths.LeaderDir())
	if err != nil {
		return Status{}, err
	}
	st.Candidates = n
	if data != nil {
		var c Candidate
		if json.Unmarshal(data, &c) != nil || c.ID == "" {
			c = Candidate{ID: string(data)}
		}
		st.Leader = &c
	}
	for _, svc := range services {
		ss := ServiceStatus{Service: svc}
		sel, _, err := readSelection(conn, paths, svc)
		if err != nil && !errors.Is(err, contract.ErrInvalidDocument) {
			return Status{}, err
		}
		ss.Selection = sel
		o, _, err := ReadOverride(conn, paths, svc)
		if err != nil && !errors.Is(err, contract.ErrInvalidDocument) {
			return Status{}, err
		}
		ss.Override, ss.OverrideActive = o, o.ActiveAt(now)
		st.Services = append(st.Services, ss)
	}
	reg, err := readRegistered(conn, paths)
	if err != nil {
		return Status{}, err
	}
	st.Instances = reg
	return st, nil
}

// readRegistered lists <root>/instances/<cluster>/<stage>/<instance>.
func readRegistered(conn *zk.Conn, paths contract.Paths) ([]Registered, error) {
	var out []Registered
	err := walkInstances(conn, paths, func(cluster, stage string, instances []string) error {
		out = append(out, Registered{Cluster: cluster, Stage: stage, Instances: instances})
		return nil
	})
	return out, err
}

// ReadRegistrations reads the registration document of every pipeline
// instance registered in ZooKeeper. An instance that goes away meanwhile or
// whose document does not decode is left out.
func ReadRegistrations(conn *zk.Conn, paths contract.Paths) ([]contract.Registration, error) {
	var out []contract.Registration
	err := walkInstances(conn, paths, func(cluster, stage string, instances []string) error {
		for _, in := range instances {
			b, _, err := conn.Get(paths.InstancesDir(cluster) + "/" + stage + "/" + in)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			var r contract.Registration
			if json.Unmarshal(b, &r) == nil {
				out = append(out, r)
			}
		}
		return nil
	})
	return out, err
}

// darkInstances is the child of <root>/instances that holds the dark
// pipelines' registrations (contract.Paths.DarkInstances).
const darkInstances = "dark"

// walkInstances calls fn for every (cluster, stage) under <root>/instances
// with its instances, in name order; a dark target's cluster is "dark/<name>".
func walkInstances(conn *zk.Conn, paths contract.Paths, fn func(cluster, stage string, instances []string) error) error {
	children := func(p string) ([]string, error) {
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		slices.Sort(kids)
		return kids, err
	}
	clusters, err := children(paths.InstancesDir(""))
	if err != nil {
		return err
	}
	// Dark pipelines register one level deeper, instances/dark/<name>/…:
	// each dark target reads as the cluster "dark/<name>".
	if i := slices.Index(clusters, darkInstances); i >= 0 {
		names, err := children(paths.InstancesDir(darkInstances))
		if err != nil {
			return err
		}
		for j := range names {
			names[j] = darkInstances + "/" + names[j]
		}
		clusters = slices.Concat(clusters[:i], names, clusters[i+1:])
	}
	for _, cl := range clusters {
		stages, err := children(paths.InstancesDir(cl))
		if err != nil {
			return err
		}
		for _, stage := range stages {
			inst, err := children(paths.InstancesDir(cl) + "/" + stage)
			if err != nil {
				return err
			}
			if err := fn(cl, stage, inst); err != nil {
				return err
			}
		}
	}
	return nil
}
