package selector

import "github.com/hotpair/hotpair/contract"

// ServiceSet is a set of services, e.g. the services of a campaign whose
// values came from the other side.
type ServiceSet uint8

// Add returns the set with svc added.
func (s ServiceSet) Add(svc contract.Service) ServiceSet { return s | 1<<svc }

// Has reports whether svc is in the set.
func (s ServiceSet) Has(svc contract.Service) bool { return s&(1<<svc) != 0 }

// Empty reports whether the set has no service.
func (s ServiceSet) Empty() bool { return s == 0 }

// Slice returns the names of the services in the set, in tag order.
func (s ServiceSet) Slice() []string {
	var out []string
	for _, svc := range contract.Services() {
		if s.Has(svc) {
			out = append(out, svc.String())
		}
	}
	return out
}
