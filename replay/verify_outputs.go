package replay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/canary/outdiff"
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/kafka"
)

// outputs are the last value per campaign of the three service outputs of
// one pipeline (the topics are compacted: the last value is the state).
type outputs struct {
	outdiff.Outputs
	// Bad lists output records that do not decode: a regression of their own.
	Bad []OutputDiff
}

func outputTopics(t contract.Topics) []string {
	return []string{t.BudgetStatus, t.Pacing, t.BidMultipliers}
}

// readOutputs reads the output topics from their start to their current end.
func readOutputs(ctx context.Context, c kafka.Cluster, t contract.Topics, side string) (outputs, error) {
	out := outputs{Outputs: outdiff.NewOutputs()}
	cl, err := kafka.NewClient(c, "hotpair-verify-outputs", kgo.ConsumeTopics(outputTopics(t)...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return out, fmt.Errorf("replay: verify: %w", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, outputTopics(t)...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return out, fmt.Errorf("replay: verify: listing the %s outputs: %w", side, err)
	}
	left := map[string]map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if left[o.Topic] == nil {
				left[o.Topic] = map[int32]int64{}
			}
			left[o.Topic][o.Partition] = o.Offset
		}
	})
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("replay: verify: reading the %s outputs: %w", side, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			out.add(t, r, side)
			if end, ok := left[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
				delete(left[r.Topic], r.Partition)
				if len(left[r.Topic]) == 0 {
					delete(left, r.Topic)
				}
			}
		})
	}
	return out, nil
}

func (o *outputs) add(t contract.Topics, r *kgo.Record, side string) {
	output := map[string]string{t.BudgetStatus: outdiff.BudgetStatus, t.Pacing: outdiff.Pacing, t.BidMultipliers: outdiff.BidMultipliers}[r.Topic]
	if output == "" {
		return
	}
	if err := o.Outputs.Add(output, string(r.Key), r.Value); err != nil {
		o.Bad = append(o.Bad, OutputDiff{Output: r.Topic, Key: string(r.Key), Field: "value",
			Baseline: "", Candidate: "", Detail: fmt.Sprintf("%s output does not decode: %v", side, err)})
	}
}

// endOffsetTotal returns the sum of the end offsets of topics: it changes
// whenever anything is written to them.
func endOffsetTotal(ctx context.Context, adm *kadm.Client, topics ...string) (int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	return total, err
}

// loadBudgets reads a JSON-lines file of contract.Budget rows, validating
// each; a bad line is an error naming it.
func loadBudgets(path string) ([]contract.Budget, [][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: verify: budgets: %w", err)
	}
	defer f.Close()
	var rows []contract.Budget
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), contract.MaxValueBytes+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		b, err := contract.DecodeBudget(line)
		if err != nil {
			return nil, nil, fmt.Errorf("replay: verify: budgets %s:%d: %w", path, n, err)
		}
		rows, lines = append(rows, b), append(lines, bytes.Clone(line))
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("replay: verify: budgets %s: %w", path, err)
	}
	return rows, lines, nil
}

// writeBudgets writes budget rows to a cluster's budgets topic, keyed by
// campaign on goka's partitions, and waits for every acknowledgement.
func writeBudgets(ctx context.Context, c kafka.Cluster, topic string, rows []contract.Budget, lines [][]byte) error {
	cl, err := kafka.NewProducer(c, "hotpair-verify-budgets", kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return fmt.Errorf("replay: verify: %w", err)
	}
	defer cl.Close()
	errs := make(chan error, 1)
	for i, b := range rows {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(b.Campaign), Value: lines[i]}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("replay: verify: writing budgets to %s: %w", c, err)
	}
	select {
	case err := <-errs:
		return fmt.Errorf("replay: verify: writing budgets to %s: %w", c, err)
	default:
		return nil
	}
}
