package pipeline

import (
	"fmt"
	"strings"

	"github.com/hotpair/hotpair/contract"
)

// darkTopicRoot starts the name of every dark topic and group
// (contract.DarkPrefix); darkCluster is the registry's parent of the dark
// pipelines' registrations (contract.Paths.DarkInstances).
const (
	darkTopicRoot = "dark."
	darkCluster   = "dark"
)

// darkTopicPrefix is the prefix of every topic and group of a dark
// pipeline of target name with the configured topic prefix: the dark
// prefix comes first, so that it starts every name; a prefix that already
// starts with it is kept. A prefix of another dark target is an error.
func darkTopicPrefix(name, prefix string) (string, error) {
	dark := contract.DarkPrefix(name)
	switch {
	case strings.HasPrefix(prefix, dark):
		return prefix, nil
	case strings.HasPrefix(prefix, darkTopicRoot):
		return "", fmt.Errorf("%q starts like another dark target's topics; a dark pipeline's topics start with %q by themselves, so remove the prefix or set it under that one", prefix, dark)
	}
	return dark + prefix, nil
}

// refused is the guard's report of a record it did not send: a dark
// pipeline tried to write outside its prefix, which its configuration
// cannot cause, so it is a bug worth an error line and a metric.
func (p *Pipeline) refused(topic string) {
	p.metrics.refused.WithLabelValues(topic).Inc()
	p.log.Error("refused a record to a topic outside the dark prefix; it was not sent",
		"topic", topic, "prefix", p.guard.Prefix())
}
