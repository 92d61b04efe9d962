package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/replay"
)

// replaySubcommands are the subcommands of "hotpair replay".
var replaySubcommands = []command{
	{"record", "record a topic (live for a duration, or a past window) into a file", runReplayRecord},
	{"inspect", "describe a recording: counts, time span, rate over time, keys, sizes, order", runReplayInspect},
	{"retime", "rewrite a recording's timestamps to a fixed rate", runReplayRetime},
	{"play", "play a recording into one or more topics at an exact rate", runReplayPlay},
	{"verify", "play a recording into a baseline and a candidate pipeline and compare them", runReplayVerify},
}

func runReplay(ctx context.Context, a *app, args []string) int {
	return runSubcommand(ctx, a, "replay", "docs/replay.md", replaySubcommands, args)
}

// filterFlags are the record filters shared by record and play.
type filterFlags struct{ keys, headers, where listFlag }

func addFilterFlags(fs *flag.FlagSet) *filterFlags {
	f := &filterFlags{}
	fs.Var(&f.keys, "key", "keep records with this key (repeatable; a trailing * matches a prefix)")
	fs.Var(&f.headers, "has-header", "keep records with this header, NAME or NAME=VALUE (repeatable)")
	fs.Var(&f.where, "where", "keep records whose JSON value has FIELD=VALUE, e.g. advertiser=adv-7 or a.b=c (repeatable; repeated fields are alternatives)")
	return f
}

func (f *filterFlags) filter() (replay.Filter, error) {
	return replay.ParseFilter(f.keys, f.headers, f.where)
}

// parseWhen reads an RFC 3339 time, "now", or a duration before now ("-2h").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if strings.HasPrefix(s, "-") {
		if d, err := time.ParseDuration(s); err == nil {
			return now.Add(d), nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time, \"now\" nor a duration before now like -2h", s)
	}
	return t, nil
}

func runReplayRecord(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "replay record", "replay record --brokers H:P[,H:P] --topic T (--duration D | --since T1 [--until T2]) -o FILE [filters]")
	var brokers listFlag
	fs.Var(&brokers, "brokers", "brokers of the cluster to record from (required)")
	topic := fs.String("topic", "", "topic to record (required)")
	duration := fs.Duration("duration", 0, "record live traffic for this long, from the topic's end")
	var since, until string
	fs.StringVar(&since, "since", "", "record a past window from this time (RFC 3339, or -2h for two hours ago)")
	fs.StringVar(&since, "from", "", "alias of --since")
	fs.StringVar(&until, "until", "", "end of the window, exclusive (default: now; a future time records live until then)")
	fs.StringVar(&until, "to", "", "alias of --until")
	out := fs.String("o", "", "recording file to write (required)")
	limit := fs.Int64("limit", 0, "stop after this many records (0: no limit)")
	progress := fs.String("progress", "auto", "progress display: auto (a live line on a terminal, a line every 10s otherwise), plain, none")
	httpAddr := fs.String("http", "", "serve /metrics on this address while recording")
	kf := kafka.AddFlags(fs)
	ff := addFilterFlags(fs)
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, a.stderr, "unexpected argument %q", pos[0])
	case len(brokers) == 0 || *topic == "" || *out == "":
		return usageError(fs, a.stderr, "--brokers, --topic and -o are required")
	case (*duration > 0) == (since != ""):
		return usageError(fs, a.stderr, "give either --duration (live) or --since (a past window)")
	case until != "" && since == "":
		return usageError(fs, a.stderr, "--until needs --since")
	case *progress != "auto" && *progress != "plain" && *progress != "none":
		return usageError(fs, a.stderr, "--progress must be auto, plain or none")
	}
	auth, ok := loadKafka(a, "replay record", kf)
	if !ok {
		return 1
	}
	o := replay.RecorderOptions{Brokers: brokers, KafkaAuth: auth, Topic: *topic, Output: *out, Duration: *duration, Limit: *limit, Logger: a.logger}
	now := time.Now()
	var err error
	if since != "" {
		if o.Since, err = parseWhen(since, now); err != nil {
			return usageError(fs, a.stderr, "--since: %v", err)
		}
		if until != "" {
			if o.Until, err = parseWhen(until, now); err != nil {
				return usageError(fs, a.stderr, "--until: %v", err)
			}
		}
	}
	if o.Filter, err = ff.filter(); err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	o.Progress, o.ProgressInterval = progressPrinter(a.stderr, *progress)
	if o.Registerer, err = serveReplayMetrics(ctx, a.logger, *httpAddr); err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay record: --http:", err)
		return 1
	}
	rec, err := replay.NewRecorder(o)
	if err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	if err := rec.Run(ctx); err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay record:", err)
		return 1
	}
	r := rec.Result()
	fmt.Fprintf(a.stdout, "recorded %d records (%s) into %s in %v; %d left out by filters or window; stopped: %s\n",
		r.Records, replay.FormatBytes(r.Bytes), *out, r.Elapsed.Round(time.Millisecond), r.Filtered, r.Stopped)
	return 0
}

// progressPrinter returns the recorder's progress callback for a mode: a
// line rewritten in place on a terminal, a plain line every 10 s otherwise.
func progressPrinter(w io.Writer, mode string) (func(replay.Progress), time.Duration) {
	if mode == "none" {
		return nil, 0
	}
	if mode == "auto" && isTerminal(w) {
		return func(p replay.Progress) {
			fmt.Fprintf(w, "\r\033[K%s", progressLine(p))
			if p.Stopped != "" {
				fmt.Fprintln(w)
			}
		}, 250 * time.Millisecond
	}
	return func(p replay.Progress) {
		if p.Stopped == "" {
			fmt.Fprintln(w, progressLine(p))
		}
	}, 10 * time.Second
}

func progressLine(p replay.Progress) string {
	rate := 0.0
	if p.Elapsed > 0 {
		rate = float64(p.Records) / p.Elapsed.Seconds()
	}
	pct := ""
	if p.Total > 0 {
		pct = fmt.Sprintf(" %3.0f%%", 100*min(1, p.Position.Seconds()/p.Total.Seconds()))
	}
	return fmt.Sprintf("recording:%s %d records, %s, %.0f/s, %d left out, %v elapsed",
		pct, p.Records, replay.FormatBytes(p.Bytes), rate, p.Filtered, p.Elapsed.Round(time.Second))
}

// serveReplayMetrics returns the registry a recorder or player registers
// on, served on addr until ctx ends when addr is set.
func serveReplayMetrics(ctx context.Context, log *slog.Logger, addr string) (*prometheus.Registry, error) {
	reg := newRegistry()
	if addr == "" {
		return reg, nil
	}
	_, err := serveHTTP(ctx, log, addr, metricsMux(reg))
	return reg, err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runReplayInspect(_ context.Context, a *app, args []string) int {
	fs := newFlags(a, "replay inspect", "replay inspect FILE [--json]")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, a.stderr, "want exactly one recording file")
	}
	in, err := replay.Inspect(pos[0])
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay inspect:", err)
		return 1
	}
	if *asJSON {
		return replayJSON(a, in)
	}
	in.WriteText(a.stdout)
	return 0
}

// replayJSON prints v as the JSON output of a replay command.
func replayJSON(a *app, v any) int {
	if err := printJSON(a.stdout, v); err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay:", err)
		return 1
	}
	return 0
}

func runReplayRetime(_ context.Context, a *app, args []string) int {
	fs := newFlags(a, "replay retime", "replay retime --qps N FILE -o OUT [--start T]")
	qps := fs.Float64("qps", 0, "records per second to retime to (required)")
	out := fs.String("o", "", "output file (required)")
	start := fs.String("start", "", "new timestamp of the first record, RFC 3339 (default: its old one)")
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	switch {
	case len(pos) != 1:
		return usageError(fs, a.stderr, "want exactly one input recording")
	case *qps <= 0:
		return usageError(fs, a.stderr, "--qps must be a positive rate")
	case *out == "":
		return usageError(fs, a.stderr, "-o is required")
	case *out == pos[0]:
		return usageError(fs, a.stderr, "-o must differ from the input")
	}
	o := replay.RetimeOptions{Input: pos[0], Output: *out, QPS: *qps}
	if *start != "" {
		t, err := time.Parse(time.RFC3339Nano, *start)
		if err != nil {
			return usageError(fs, a.stderr, "--start %q is not an RFC 3339 time", *start)
		}
		o.Start = t
	}
	res, err := replay.Retime(o)
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay retime:", err)
		return 1
	}
	if res.Problem != nil {
		fmt.Fprintf(a.stderr, "hotpair replay retime: warning: the input is incomplete (%v); its readable records were retimed\n", res.Problem)
	}
	fmt.Fprintf(a.stdout, "retimed %d records to %s/s: %s .. %s into %s\n", res.Records, strconv.FormatFloat(*qps, 'f', -1, 64),
		res.First.Format(time.RFC3339Nano), res.Last.Format(time.RFC3339Nano), *out)
	return 0
}

func runReplayPlay(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "replay play", "replay play FILE --target H:P[,H:P]/TOPIC [--target …] [--qps N | --percent P | --max] [--header k=v] [--loop] [--duration D] [--json]")
	var targets, headers listFlag
	fs.Var(&targets, "target", "BROKERS/TOPIC to play into, e.g. localhost:9092/ad-events (repeatable; every target gets the same records)")
	qps := fs.Float64("qps", 0, "play at exactly this many records per second")
	percent := fs.Float64("percent", 0, "play the records of this percentage of keys (chosen by key hash) at this percentage of the recording's rate")
	unpaced := fs.Bool("max", false, "play as fast as the targets take records")
	fs.Var(&headers, "header", "add header NAME=VALUE to every record (repeatable)")
	loop := fs.Bool("loop", false, "start over at the end of the recording (needs --duration)")
	duration := fs.Duration("duration", 0, "stop after this long (default: at the end of the recording)")
	setTime := fs.String("set-time-field", "", "set this top-level JSON field of every value (e.g. ts) to the send time, so event-time windows see live traffic")
	timestamps := fs.String("timestamps", "now", "record timestamps to send: now (the send time) or recorded")
	partitioning := fs.String("partitioning", "key", "key: goka's hash of the key (what goka consumers expect); preserve: the recorded partition")
	maxInFlight := fs.Int("max-in-flight", 10000, "records a target may hold unacknowledged before the player waits for it")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	httpAddr := fs.String("http", "", "serve /metrics on this address while playing")
	kf := kafka.AddFlags(fs)
	ff := addFilterFlags(fs)
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, a.stderr, "want exactly one recording file")
	}
	auth, ok := loadKafka(a, "replay play", kf)
	if !ok {
		return 1
	}
	o := replay.PlayerOptions{Recording: pos[0], QPS: *qps, Percent: *percent, Unpaced: *unpaced, Loop: *loop,
		Duration: *duration, MaxInFlight: *maxInFlight, SetTimeField: *setTime, Logger: a.logger}
	for _, t := range targets {
		tg, err := replay.ParseTarget(t)
		if err != nil {
			return usageError(fs, a.stderr, "--target: %v", err)
		}
		tg.KafkaAuth = auth
		o.Targets = append(o.Targets, tg)
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return usageError(fs, a.stderr, "--header %q: want NAME=VALUE", h)
		}
		o.Headers = append(o.Headers, replay.Header{Key: k, Value: []byte(v)})
	}
	switch *timestamps {
	case "now":
	case "recorded":
		o.RecordedTimestamps = true
	default:
		return usageError(fs, a.stderr, "--timestamps must be now or recorded")
	}
	switch *partitioning {
	case "key":
		o.Partitioning = replay.PartitionByKey
	case "preserve":
		o.Partitioning = replay.PartitionPreserve
	default:
		return usageError(fs, a.stderr, "--partitioning must be key or preserve")
	}
	var err error
	if o.Filter, err = ff.filter(); err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	if a.checkOnly {
		return checkPlay(a, o)
	}
	if o.Registerer, err = serveReplayMetrics(ctx, a.logger, *httpAddr); err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay play: --http:", err)
		return 1
	}
	p, err := replay.NewPlayer(o)
	if err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	runErr := p.Run(ctx)
	rep := p.Report()
	if *asJSON {
		replayJSON(a, rep)
	} else if rep.Mode != "" {
		rep.WriteText(a.stdout)
	}
	if runErr != nil {
		fmt.Fprintln(a.stderr, "hotpair replay play:", runErr)
		return 1
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintln(a.stderr, "hotpair replay play: interrupted")
	}
	return 0
}

// checkPlay is replay play under `config check`: the options are valid and
// the recording opens.
func checkPlay(a *app, o replay.PlayerOptions) int {
	if _, err := replay.NewPlayer(o); err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay play:", err)
		return 1
	}
	r, err := replay.Open(o.Recording)
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair replay play:", err)
		return 1
	}
	_ = r.Close()
	return 0
}

// Exit codes of replay verify besides 0 (passed) and 2 (bad usage).
const (
	exitRegression = 1 // the candidate differs from the baseline
	exitNoVerdict  = 3 // the verification could not complete
)

func runReplayVerify(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "replay verify", "replay verify --recording FILE --baseline BIN --candidate BIN [--budgets FILE] [--json-out FILE] [flags]")
	recording := fs.String("recording", "", "ad-events recording to play into both pipelines (required; or give it as the argument)")
	budgets := fs.String("budgets", "", "JSON lines of budget rows to load into both pipelines first")
	baseline := fs.String("baseline", "", "hotpair binary of the baseline build (required)")
	candidate := fs.String("candidate", "", "hotpair binary of the candidate build (required)")
	jsonOut := fs.String("json-out", "", "write the JSON report to this file")
	asJSON := fs.Bool("json", false, "print the JSON report instead of the summary")
	cfgPath := fs.String("config", "", "verify config YAML: thresholds, settle, timeout (docs/replay.md)")
	pipeCfg := fs.String("pipeline-config", "", "hotpair pipeline config given to both pipelines (window, pacer, bidder)")
	var baseBrokers, candBrokers listFlag
	fs.Var(&baseBrokers, "baseline-brokers", "cluster for the baseline pipeline (default: an in-process kfake cluster)")
	fs.Var(&candBrokers, "candidate-brokers", "cluster for the candidate pipeline (default: an in-process kfake cluster)")
	partitions := fs.Int("partitions", 4, "partitions of the pipeline topics")
	prefix := fs.String("topic-prefix", "", "topic prefix of both pipelines")
	qps := fs.Float64("qps", 0, "play at exactly this many records per second (default: the recorded pace)")
	percent := fs.Float64("percent", 0, "play this percentage of keys at this percentage of the recording's rate")
	unpaced := fs.Bool("max", false, "play as fast as both pipelines' clusters take records")
	keepTime := fs.Bool("keep-event-time", false, "play the ad events' ts as recorded (default: set it to the send time)")
	settle := fs.Duration("settle", 0, "how long outputs must stay unchanged before comparing (default: window + lateness + 3s)")
	timeout := fs.Duration("timeout", 0, "bound on the whole verification (default 10m)")
	workDir := fs.String("work-dir", "", "keep the pipelines' logs and state here (default: a temporary directory, kept only on failure)")
	kf := kafka.AddFlags(fs) // for --baseline-brokers and --candidate-brokers
	ff := addFilterFlags(fs)
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if *recording == "" && len(pos) == 1 {
		*recording, pos = pos[0], nil
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, a.stderr, "unexpected argument %q", pos[0])
	case *recording == "" || *baseline == "" || *candidate == "":
		return usageError(fs, a.stderr, "--recording, --baseline and --candidate are required")
	case *partitions < 1:
		return usageError(fs, a.stderr, "--partitions must be at least 1")
	}
	o := replay.VerifyOptions{Recording: *recording, Budgets: *budgets, Baseline: *baseline, Candidate: *candidate,
		BaselineBrokers: baseBrokers, CandidateBrokers: candBrokers, PipelineConfig: *pipeCfg,
		Partitions: int32(*partitions), TopicPrefix: *prefix, QPS: *qps, Percent: *percent, Unpaced: *unpaced,
		KeepEventTime: *keepTime, Settle: *settle, Timeout: *timeout, WorkDir: *workDir, Kafka: kf.Security(), Logger: a.logger}
	if *cfgPath != "" {
		cfg, err := replay.LoadVerifyConfig(*cfgPath)
		if err != nil {
			fmt.Fprintln(a.stderr, "hotpair replay verify:", err)
			return exitNoVerdict
		}
		o.Thresholds = cfg.Thresholds
		if o.Settle == 0 {
			o.Settle = cfg.Settle
		}
		if o.Timeout == 0 {
			o.Timeout = cfg.Timeout
		}
	}
	var err error
	if o.Filter, err = ff.filter(); err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	v, err := replay.NewVerifier(o)
	if err != nil {
		return usageError(fs, a.stderr, "%v", err)
	}
	runErr := v.Run(ctx)
	rep := v.Report()
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(a.stderr, "hotpair replay verify:", err)
			return exitNoVerdict
		}
	}
	if *asJSON {
		replayJSON(a, rep)
	} else {
		rep.WriteText(a.stdout)
	}
	switch {
	case runErr == nil:
		return 0
	case errors.Is(runErr, replay.ErrRegression):
		return exitRegression
	}
	fmt.Fprintln(a.stderr, "hotpair replay verify:", runErr)
	return exitNoVerdict
}
