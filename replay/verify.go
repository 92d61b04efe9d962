package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/pipeline"
)

// VerifyOptions configure a Verifier.
type VerifyOptions struct {
	// Recording is the ad-events recording to play into both pipelines.
	Recording string
	// Budgets is an optional JSON-lines file of contract.Budget rows, loaded
	// into both pipelines before the recording plays.
	Budgets string
	// Baseline and Candidate are the hotpair binaries to compare.
	Baseline, Candidate string
	// BaselineBrokers and CandidateBrokers are the clusters the pipelines
	// run on; empty: verify starts an in-process kfake cluster for each.
	// Given clusters must be empty or use a fresh TopicPrefix.
	BaselineBrokers, CandidateBrokers []string
	// Kafka is the TLS and SASL of those given clusters (not of the ones
	// verify starts): verify's own clients connect with it, and both
	// pipelines get it as --kafka-* flags.
	Kafka contract.KafkaSecurity
	// PipelineConfig is a `hotpair pipeline --config` file given to both
	// (window, pacer, bidder settings); verify sets side, brokers, instance,
	// http, storage, state dir and partitions on the command line.
	PipelineConfig string
	// Partitions of the pipeline topics (default 4).
	Partitions int32
	// TopicPrefix of the pipeline topics.
	TopicPrefix string

	// How the recording plays (see PlayerOptions): at QPS, at Percent of its
	// rate, unpaced, or at its recorded pace when none is set.
	QPS     float64
	Percent float64
	Unpaced bool
	Filter  Filter
	// KeepEventTime plays the ad events' ts as recorded; by default ts is set
	// to the send time, so a recording of any age makes live-looking windows
	// and days in both pipelines.
	KeepEventTime bool

	Thresholds Thresholds
	// Settle is how long the outputs must stay unchanged once the input
	// drained (default 2s once both pipelines report no open window and
	// every spend event consumed; window + lateness + idle_close of the
	// pipeline config + 3s for a build without those metrics).
	Settle time.Duration
	// Timeout bounds the whole verification (default 10m).
	Timeout time.Duration
	// WorkDir keeps the pipelines' logs and state; default a temporary
	// directory, removed when the candidate passes and kept when it fails.
	WorkDir string

	// Injected dependencies.
	Logger *slog.Logger // default: discard
}

func (o *VerifyOptions) validate() error {
	switch {
	case o.Recording == "":
		return errors.New("replay: VerifyOptions.Recording is required")
	case o.Baseline == "" || o.Candidate == "":
		return errors.New("replay: VerifyOptions.Baseline and Candidate (hotpair binaries) are required")
	case o.Partitions < 0:
		return errors.New("replay: VerifyOptions.Partitions must be positive")
	case countTrue(o.QPS > 0, o.Percent > 0, o.Unpaced) > 1:
		return errors.New("replay: VerifyOptions.QPS, Percent and Unpaced exclude each other")
	}
	for _, b := range []string{o.Baseline, o.Candidate} {
		if st, err := os.Stat(b); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("replay: verify: %s is not an executable hotpair binary", b)
		}
	}
	return o.Thresholds.Validate()
}

// VerifyReport is what a verification found.
type VerifyReport struct {
	Recording string `json:"recording"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Passed is true when outputs agree and performance is within the thresholds.
	Passed bool `json:"passed"`
	// Error is set when the verification itself could not complete.
	Error   string `json:"error,omitempty"`
	Budgets int    `json:"budgets"`
	Play    Report `json:"play"`
	// Keys counts the campaigns of each output, per build.
	BaselineKeys  map[string]int `json:"baseline_keys"`
	CandidateKeys map[string]int `json:"candidate_keys"`
	// DifferingKeys are the campaigns with any output difference, sorted.
	DifferingKeys   []string         `json:"differing_keys"`
	Diffs           []OutputDiff     `json:"diffs"`
	BaselinePerf    PerfStats        `json:"baseline_perf"`
	CandidatePerf   PerfStats        `json:"candidate_perf"`
	PerfRegressions []PerfRegression `json:"perf_regressions"`
	Thresholds      Thresholds       `json:"thresholds"`
	WorkDir         string           `json:"work_dir,omitempty"`
	Elapsed         time.Duration    `json:"elapsed_ns"`
}

// Verifier plays a recording into a baseline and a candidate pipeline and
// compares them.
type Verifier struct {
	o        VerifyOptions
	log      *slog.Logger
	topics   contract.Topics
	pipeCfg  pipeline.Config
	auth     *contract.KafkaAuth // of the given clusters
	report   VerifyReport
	keepWork bool
	// quietDrained and quietBlind are how long outputs must stay unchanged,
	// with and without the pipelines' drain metrics.
	quietDrained, quietBlind time.Duration
}

// NewVerifier validates o and returns a Verifier.
func NewVerifier(o VerifyOptions) (*Verifier, error) {
	if o.Thresholds == (Thresholds{}) {
		o.Thresholds = DefaultThresholds()
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := pipeline.DefaultConfig()
	if o.PipelineConfig != "" {
		var err error
		if cfg, err = pipeline.LoadConfig(o.PipelineConfig); err != nil {
			return nil, fmt.Errorf("replay: verify: pipeline config: %w", err)
		}
	}
	auth, err := o.Kafka.Load("", nil)
	if err != nil {
		return nil, fmt.Errorf("replay: verify: %w", err)
	}
	v := &Verifier{o: o, log: o.Logger, topics: contract.TopicsWithPrefix(o.TopicPrefix), pipeCfg: cfg, auth: auth}
	// The last windows close once their partitions were idle for
	// idle_close and their end plus lateness has passed: without the
	// pipeline's drain metrics, only that long a quiet time is safe.
	a := cfg.Aggregator
	v.quietBlind = a.Window + a.Lateness + a.IdleClose + 3*time.Second
	v.quietDrained = 2 * time.Second
	if o.Settle > 0 {
		v.quietBlind, v.quietDrained = o.Settle, o.Settle
	}
	return v, nil
}

// Report returns the report of the last Run.
func (v *Verifier) Report() VerifyReport { return v.report }

// verifySide is one build under test: its cluster, its process, what was
// measured of it.
type verifySide struct {
	name    string
	bin     string
	cluster kafka.Cluster
	hosted  *kfake.Cluster
	proc    *pipelineProc
	client  *kgo.Client
	adm     *kadm.Client

	cpuAtPlay float64
	samples   []perfSample
	perf      PerfStats
	out       outputs
}

// Run verifies the candidate. It returns ErrRegression when outputs differ
// or performance is beyond the thresholds (the report names what), another
// error when the verification could not complete.
//
// The order is fixed: start both clusters and pipelines; wait until every
// stage of both owns its partitions; load the budgets into both and wait
// until every service has taken them; play the recording into both in
// lockstep while sampling each process's /metrics; wait until both consumed
// every ad event, then until their outputs stayed unchanged for Settle;
// take the last metrics; stop both; read and compare the outputs.
func (v *Verifier) Run(ctx context.Context) (err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, v.o.Timeout)
	defer cancel()
	v.report = VerifyReport{Recording: v.o.Recording, Baseline: v.o.Baseline, Candidate: v.o.Candidate, Thresholds: v.o.Thresholds}
	defer func() {
		v.report.Elapsed = time.Since(start)
		if err != nil && !errors.Is(err, ErrRegression) {
			v.report.Error = err.Error()
		}
	}()
	workDir, err := v.workDir()
	if err != nil {
		return err
	}
	defer v.cleanWorkDir(workDir, &err)

	var rows []contract.Budget
	var lines [][]byte
	if v.o.Budgets != "" {
		if rows, lines, err = loadBudgets(v.o.Budgets); err != nil {
			return err
		}
	}
	v.report.Budgets = len(rows)

	sides := []*verifySide{
		{name: "baseline", bin: v.o.Baseline, cluster: kafka.Cluster{Name: "baseline", Brokers: v.o.BaselineBrokers, Auth: v.auth}},
		{name: "candidate", bin: v.o.Candidate, cluster: kafka.Cluster{Name: "candidate", Brokers: v.o.CandidateBrokers, Auth: v.auth}},
	}
	defer stopSides(sides)
	if err := v.startSides(sides, workDir); err != nil {
		return err
	}
	if err := v.waitReady(ctx, sides); err != nil {
		return err
	}
	if err := v.loadBudgets(ctx, sides, rows, lines); err != nil {
		return err
	}
	if err := v.play(ctx, sides); err != nil {
		return err
	}
	if err := v.settle(ctx, sides); err != nil {
		return err
	}
	if err := v.finalMetrics(ctx, sides); err != nil {
		return err
	}
	for _, s := range sides {
		s.proc.stop(15 * time.Second)
	}
	for _, s := range sides {
		if s.out, err = readOutputs(ctx, s.cluster, v.topics, s.name); err != nil {
			return err
		}
	}
	return v.compare(sides[0], sides[1])
}

func (v *Verifier) workDir() (string, error) {
	if v.o.WorkDir != "" {
		v.keepWork = true
		return v.o.WorkDir, os.MkdirAll(v.o.WorkDir, 0o755)
	}
	d, err := os.MkdirTemp("", "hotpair-verify-")
	if err != nil {
		return "", fmt.Errorf("replay: verify: %w", err)
	}
	return d, nil
}

// cleanWorkDir removes a temporary work directory when the candidate
// passed, and keeps it (with the pipelines' logs) otherwise.
func (v *Verifier) cleanWorkDir(dir string, err *error) {
	if *err == nil && !v.keepWork {
		os.RemoveAll(dir)
		return
	}
	v.report.WorkDir = dir
}

func (v *Verifier) startSides(sides []*verifySide, workDir string) error {
	for _, s := range sides {
		if len(s.cluster.Brokers) == 0 {
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				return fmt.Errorf("replay: verify: starting a kfake cluster: %w", err)
			}
			s.hosted, s.cluster = c, kafka.Cluster{Name: s.name, Brokers: c.ListenAddrs()}
		}
		cl, err := kafka.NewClient(s.cluster, "hotpair-verify-"+s.name)
		if err != nil {
			return fmt.Errorf("replay: verify: %w", err)
		}
		s.client, s.adm = cl, kadm.NewClient(cl)
		if s.proc, err = startPipeline(&v.o, s.name, s.bin, s.cluster.Brokers, workDir, s.hosted != nil); err != nil {
			return err
		}
		v.log.Info("replay verify: pipeline started", "build", s.name, "binary", s.bin, "brokers", s.cluster.Brokers, "log", s.proc.logPath)
	}
	return nil
}

// stopSides stops what startSides started, in reverse order.
func stopSides(sides []*verifySide) {
	for _, s := range slices.Backward(sides) {
		s.proc.stop(15 * time.Second)
		if s.client != nil {
			s.client.Close()
		}
		if s.hosted != nil {
			s.hosted.Close()
		}
	}
}

// poll calls check every interval until it returns true or an error, ctx
// ends, or a pipeline exits.
func poll(ctx context.Context, sides []*verifySide, interval time.Duration, what string, check func() (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, s := range sides {
			if err := s.proc.alive(); err != nil {
				return fmt.Errorf("replay: verify: while waiting %s: %w", what, err)
			}
		}
		ok, err := check()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replay: verify: timed out waiting %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// waitReady waits until every stage of both pipelines has its input partitions.
func (v *Verifier) waitReady(ctx context.Context, sides []*verifySide) error {
	for _, s := range sides {
		err := poll(ctx, sides, 250*time.Millisecond, "for the "+s.name+" pipeline's stages to own their partitions", func() (bool, error) {
			m, err := scrapeMetrics(ctx, s.proc.httpAddr)
			if err != nil {
				return false, nil // not listening yet
			}
			for _, stage := range v.pipeCfg.Stages {
				if m.sum(metricStagePartitions, map[string]string{"service": stage}) < float64(v.o.Partitions) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	v.log.Info("replay verify: both pipelines ready")
	return nil
}

// loadBudgets writes the budget rows to both clusters and waits until every
// service of both emitted an output for each (a service that has not seen a
// campaign's budget yet would treat its first spend differently).
func (v *Verifier) loadBudgets(ctx context.Context, sides []*verifySide, rows []contract.Budget, lines [][]byte) error {
	if len(rows) == 0 {
		return nil
	}
	for _, s := range sides {
		if err := writeBudgets(ctx, s.cluster, v.topics.Budgets, rows, lines); err != nil {
			return err
		}
	}
	for _, s := range sides {
		err := poll(ctx, sides, 250*time.Millisecond, "for the "+s.name+" services to take the budgets", func() (bool, error) {
			for _, stage := range contract.Services() {
				if !slices.Contains(v.pipeCfg.Stages, stage.String()) {
					continue
				}
				n, err := endOffsetTotal(ctx, s.adm, v.topics.Output(stage.Stage()))
				if err != nil || n < int64(len(rows)) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	v.log.Info("replay verify: budgets loaded", "rows", len(rows))
	return nil
}
