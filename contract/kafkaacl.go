package contract

import (
	"fmt"
	"slices"
	"strings"
)

// KafkaACL is one permission a hotpair daemon needs on a Kafka cluster
// with authorization on: an operation on a topic, a consumer group or the
// cluster, named literally or by prefix (hotpair's own lists name every
// topic and group literally). The names are those of Kafka's kafka-acls.sh
// and of Strimzi's KafkaUser (lower case there).
type KafkaACL struct {
	// Resource is ResourceTopic, ResourceGroup or ResourceCluster.
	Resource string
	// Pattern is PatternLiteral or PatternPrefixed (topics and groups).
	Pattern string
	// Name is the topic or group name, or its prefix (none for the
	// cluster).
	Name string
	// Operation is Read, Write, Create, Describe, DescribeConfigs or
	// AlterConfigs. Kafka grants Describe with Read and Write, and
	// DescribeConfigs with AlterConfigs.
	Operation string
}

// Resources, patterns and operations of KafkaACL.
const (
	ResourceTopic   = "Topic"
	ResourceGroup   = "Group"
	ResourceCluster = "Cluster"

	PatternLiteral  = "Literal"
	PatternPrefixed = "Prefixed"

	OpRead            = "Read"
	OpWrite           = "Write"
	OpCreate          = "Create"
	OpDescribe        = "Describe"
	OpDescribeConfigs = "DescribeConfigs"
	OpAlterConfigs    = "AlterConfigs"
)

// TopicACLs grants ops on each named topic.
func TopicACLs(topics []string, ops ...string) []KafkaACL {
	var out []KafkaACL
	for _, t := range topics {
		for _, op := range ops {
			out = append(out, KafkaACL{Resource: ResourceTopic, Pattern: PatternLiteral, Name: t, Operation: op})
		}
	}
	return out
}

// GroupACLs grants ops on the named consumer group.
func GroupACLs(group string, ops ...string) []KafkaACL {
	out := make([]KafkaACL, 0, len(ops))
	for _, op := range ops {
		out = append(out, KafkaACL{Resource: ResourceGroup, Pattern: PatternLiteral, Name: group, Operation: op})
	}
	return out
}

// String is the ACL as kafka-acls.sh's options name it, e.g.
// "--topic ad-events --operation Read" or "--resource-pattern-type prefixed
// --group hotpair- --operation Read".
func (a KafkaACL) String() string {
	var b strings.Builder
	if a.Pattern == PatternPrefixed {
		b.WriteString("--resource-pattern-type prefixed ")
	}
	switch a.Resource {
	case ResourceTopic:
		fmt.Fprintf(&b, "--topic %s", a.Name)
	case ResourceGroup:
		fmt.Fprintf(&b, "--group %s", a.Name)
	case ResourceCluster:
		b.WriteString("--cluster")
	default:
		fmt.Fprintf(&b, "--%s %s", strings.ToLower(a.Resource), a.Name)
	}
	fmt.Fprintf(&b, " --operation %s", a.Operation)
	return b.String()
}

// SortACLs sorts acls by resource, pattern, name and operation, and drops
// duplicates: the same list whatever order a daemon's parts added them in.
func SortACLs(acls []KafkaACL) []KafkaACL {
	out := slices.Clone(acls)
	slices.SortFunc(out, func(a, b KafkaACL) int {
		return strings.Compare(a.Resource+"\x00"+a.Pattern+"\x00"+a.Name+"\x00"+a.Operation,
			b.Resource+"\x00"+b.Pattern+"\x00"+b.Name+"\x00"+b.Operation)
	})
	return slices.Compact(out)
}
