package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/pipeline"
)

func runPipeline(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "pipeline", "pipeline [--config FILE] [flags that override it]")
	cfgPath := fs.String("config", "", "YAML config file (docs/pipeline.md); flags below override its keys")
	side := fs.String("side", "", "side: primary or standby (key side)")
	var brokers, stages listFlag
	fs.Var(&brokers, "brokers", "Kafka brokers host:port, comma-separated (key brokers)")
	fs.Var(&stages, "stages", "stages to run, comma-separated: aggregator,budget,pacer,bidder (key stages)")
	storage := fs.String("storage", "", "storage backend: leveldb or memory (key storage.backend)")
	stateDir := fs.String("state-dir", "", "leveldb directory (key storage.dir)")
	prefix := fs.String("topic-prefix", "", "topic and group name prefix (key topic_prefix)")
	partitions := fs.Int("partitions", 0, "partitions of topics created when missing (key topics.partitions)")
	replication := fs.Int("replication", 0, "replication of topics created when missing (key topics.replication)")
	httpAddr := fs.String("http", "", "address for /metrics and /healthz (key http.listen)")
	instance := fs.String("instance", "", "instance name in health samples (key instance)")
	role := fs.String("role", "", "role: live or dark (key role)")
	darkName := fs.String("dark-name", "", "the dark target of a role-dark pipeline: every topic and group then starts with dark.NAME. (key dark_name)")
	kf := kafka.AddFlags(fs)
	var zkServers listFlag
	fs.Var(&zkServers, "zk", "ZooKeeper servers to register the instance in, host:port, comma-separated (key zk.servers)")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	cfg := pipeline.DefaultConfig()
	if *cfgPath != "" {
		var err error
		if cfg, err = pipeline.LoadConfig(*cfgPath); err != nil {
			fmt.Fprintln(a.stderr, "hotpair pipeline:", err)
			return 1
		}
	}
	override(&cfg.Side, *side)
	override(&cfg.Role, *role)
	override(&cfg.DarkName, *darkName)
	override(&cfg.Instance, *instance)
	override(&cfg.TopicPrefix, *prefix)
	override(&cfg.Storage.Backend, *storage)
	override(&cfg.Storage.Dir, *stateDir)
	override(&cfg.HTTP.Listen, *httpAddr)
	if len(brokers) > 0 {
		cfg.Brokers = brokers
	}
	if len(stages) > 0 {
		cfg.Stages = stages
	}
	if sec := kf.Security(); !sec.IsZero() {
		cfg.Kafka = sec
	}
	if len(zkServers) > 0 {
		cfg.ZK.Servers = zkServers
	}
	if *partitions > 0 {
		cfg.Topics.Partitions = int32(*partitions)
	}
	if *replication > 0 {
		cfg.Topics.Replication = int16(*replication)
	}
	if err := cfg.Validate(); err != nil {
		if *cfgPath == "" {
			return usageError(fs, a.stderr, "%v", err)
		}
		fmt.Fprintf(a.stderr, "hotpair pipeline: config %s: %v\n", *cfgPath, err)
		return 1
	}
	opts, err := cfg.Options()
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair pipeline:", err)
		return 1
	}
	if a.checkOnly {
		return 0
	}

	reg := newRegistry()
	opts.Logger, opts.Registerer = a.logger, reg
	p, err := pipeline.New(opts)
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair pipeline:", err)
		return 1
	}
	if cfg.HTTP.Listen != "" {
		mux := metricsMux(reg)
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !p.Ready() {
				http.Error(w, "recovering state or not running", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ready\n"))
		})
		addr, err := serveHTTP(ctx, a.logger, cfg.HTTP.Listen, mux)
		if err != nil {
			fmt.Fprintln(a.stderr, "hotpair pipeline: http.listen:", err)
			return 1
		}
		a.logger.Info("serving /metrics", "addr", addr.String())
	}
	a.logger.Info("pipeline starting", "side", cfg.Side, "role", cfg.Role, "dark_name", cfg.DarkName, "brokers", strings.Join(cfg.Brokers, ","), "stages", strings.Join(cfg.Stages, ","))
	if err := p.Run(ctx); err != nil {
		fmt.Fprintln(a.stderr, "hotpair pipeline:", err)
		return 1
	}
	return 0
}

func override(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}
