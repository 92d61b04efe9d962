package main

import (
	"context"
	"fmt"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
	"github.com/hotpair/hotpair/monitor"
)

// loadKafka loads the --kafka-* flags of cmd; a problem (a missing file, an
// unknown mechanism) is printed, naming the flag and the fix, with exit 1.
func loadKafka(a *app, cmd string, f *kafka.Flags) (*contract.KafkaAuth, bool) {
	auth, err := f.Load()
	if err != nil {
		fmt.Fprintf(a.stderr, "hotpair %s: %v\n", cmd, err)
		return nil, false
	}
	return auth, true
}

// checkKafka stops cmd at start when a cluster refuses its TLS or SASL
// settings (kafka.CheckAuth); a cluster that is down is no reason to stop.
func checkKafka(ctx context.Context, a *app, cmd string, clusters ...kafka.Cluster) bool {
	for _, c := range clusters {
		if len(c.Brokers) == 0 {
			continue
		}
		if err := kafka.CheckAuth(ctx, c); err != nil {
			fmt.Fprintf(a.stderr, "hotpair %s: %v\n", cmd, err)
			return false
		}
	}
	return true
}

// monitorClusterAuth loads both clusters' security blocks of a monitor
// config, for the commands that take their clusters from one.
func monitorClusterAuth(mc monitor.Config) ([2]*contract.KafkaAuth, error) {
	cls, err := kafka.LoadSides(mc.Clusters.Primary, mc.Clusters.Standby)
	return [2]*contract.KafkaAuth{cls[0].Auth, cls[1].Auth}, err
}
