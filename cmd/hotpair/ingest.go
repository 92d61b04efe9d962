package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/pipeline"
)

func runIngest(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "ingest", "ingest --primary H:P[,H:P] [--standby H:P[,H:P]] [--budgets] [FILE|-]")
	var primary, standby listFlag
	fs.Var(&primary, "primary", "brokers of the primary side's cluster")
	fs.Var(&standby, "standby", "brokers of the standby side's cluster")
	budgets := fs.Bool("budgets", false, "lines are Budget rows for the budgets topic (default: AdEvents for ad-events)")
	prefix := fs.String("topic-prefix", "", "topic name prefix")
	buffer := fs.Int("buffer", 100_000, "records each side buffers while its cluster is slow or down, before it loses new ones")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long a record may wait for its cluster before it counts as lost")
	httpAddr := fs.String("http", "", "serve /metrics on this address while ingesting")
	kf := kafka.AddFlags(fs)
	if code, done := parse(fs, args); done {
		return code
	}
	if len(primary) == 0 && len(standby) == 0 {
		return usageError(fs, a.stderr, "give the brokers of at least one side (--primary, --standby)")
	}
	if fs.NArg() > 1 {
		return usageError(fs, a.stderr, "one input file at most, got %d", fs.NArg())
	}
	src, name := io.Reader(os.Stdin), "stdin"
	if fs.NArg() == 1 && fs.Arg(0) != "-" {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(a.stderr, "hotpair ingest:", err)
			return 1
		}
		defer f.Close()
		src, name = f, fs.Arg(0)
	}
	auth, ok := loadKafka(a, "ingest", kf)
	if !ok {
		return 1
	}
	clusters := map[contract.Side][]string{}
	if len(primary) > 0 {
		clusters[contract.Primary] = primary
	}
	if len(standby) > 0 {
		clusters[contract.Standby] = standby
	}
	if !checkKafka(ctx, a, "ingest", kafka.Cluster{Name: "primary", Brokers: primary, Auth: auth},
		kafka.Cluster{Name: "standby", Brokers: standby, Auth: auth}) {
		return 1
	}
	reg := newRegistry()
	in, err := pipeline.NewIngester(pipeline.IngestOptions{
		KafkaAuth: map[contract.Side]*contract.KafkaAuth{contract.Primary: auth, contract.Standby: auth},
		Clusters:  clusters, TopicPrefix: *prefix, Buffer: *buffer, DeliveryTimeout: *timeout,
		Logger: a.logger, Registerer: reg,
	})
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair ingest:", err)
		return 1
	}
	if *httpAddr != "" {
		if _, err := serveHTTP(ctx, a.logger, *httpAddr, metricsMux(reg)); err != nil {
			fmt.Fprintln(a.stderr, "hotpair ingest: --http:", err)
			return 1
		}
	}
	res := ingestLines(a, in, src, name, *budgets)
	cctx, cancel := context.WithTimeout(context.Background(), *timeout+10*time.Second)
	defer cancel()
	in.Close(cctx)

	fmt.Fprintf(a.stderr, "hotpair ingest: %d lines, %d good, %d bad (sent to hotpair-dlq)\n", res.lines, res.good, res.bad)
	lost := false
	for side, st := range in.Stats() {
		fmt.Fprintf(a.stderr, "  %s: %d written, %d delivered, %d lost\n", side, st.Written, st.Delivered, st.Lost)
		lost = lost || st.Lost > 0
	}
	if res.bad > 0 || lost || res.err != nil {
		if res.err != nil {
			fmt.Fprintln(a.stderr, "hotpair ingest: reading input:", res.err)
		}
		return 1
	}
	return 0
}

type ingestResult struct {
	lines, good, bad int
	err              error
}

// ingestLines validates each line and writes it, byte for byte, to every
// side; a bad line goes to the dead-letter topic of every side with its
// reason, and is reported on stderr with its line number.
func ingestLines(a *app, in *pipeline.Ingester, src io.Reader, name string, budgets bool) ingestResult {
	topic, source := "ad-events", "ingest:"+name
	if budgets {
		topic = "budgets"
	}
	var res ingestResult
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 64*1024), contract.MaxValueBytes+1)
	for sc.Scan() {
		res.lines++
		line := append([]byte(nil), sc.Bytes()...)
		if len(line) == 0 {
			continue
		}
		key, err := validateLine(line, budgets)
		if err != nil {
			res.bad++
			fmt.Fprintf(a.stderr, "%s:%d: %v\n", name, res.lines, err)
			in.Write("hotpair-dlq", []byte(key), line, []kgo.RecordHeader{
				{Key: "hotpair-reason", Value: []byte(contract.ReasonOf(err))},
				{Key: "hotpair-error", Value: []byte(err.Error())},
				{Key: "hotpair-source-topic", Value: []byte(source)},
				{Key: "hotpair-source-partition", Value: []byte("-1")},
				{Key: "hotpair-source-offset", Value: []byte(strconv.Itoa(res.lines))},
			}, time.Now())
			continue
		}
		res.good++
		in.Write(topic, []byte(key), line, nil, time.Now())
	}
	res.err = sc.Err()
	return res
}

func validateLine(line []byte, budgets bool) (key string, err error) {
	if budgets {
		b, err := contract.DecodeBudget(line)
		return b.Campaign, err
	}
	e, err := contract.DecodeAdEvent(line)
	return e.Campaign, err
}
