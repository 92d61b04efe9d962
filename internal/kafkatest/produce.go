package kafkatest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers for kfake control functions that interfere with writes.

// WritesTo returns a test of whether a produce request's topic is topic
// (which must exist): requests name a topic, or from version 13 on give its
// id.
func WritesTo(t testing.TB, c *kfake.Cluster, topic string) func(kmsg.ProduceRequestTopic) bool {
	t.Helper()
	topics, err := kadm.NewClient(Client(t, c.ListenAddrs())).ListTopics(t.Context(), topic)
	if err == nil {
		err = topics[topic].Err
	}
	if err != nil {
		t.Fatalf("listing %s: %v", topic, err)
	}
	id := topics[topic].ID
	return func(rt kmsg.ProduceRequestTopic) bool { return rt.Topic == topic || rt.TopicID == id }
}

// Rejection is the answer a broker gives when it rejects every batch of a
// produce request with code (kerr.InvalidRecord: not retriable, so the
// client fails the records at once). A kfake control function returns it
// to make a write fail as a real broker would.
func Rejection(req *kmsg.ProduceRequest, code *kerr.Error) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Version = req.Version
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
