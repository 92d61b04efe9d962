package selector

import (
	"fmt"

	"github.com/hotpair/hotpair/contract"
)

// Side is one of the two pipelines. The zero value is unset.
type Side uint8

// Sides. Primary is the preferred side.
const (
	Primary Side = 1 + iota
	Standby
)

// String returns "primary", "standby" or "unset".
func (s Side) String() string {
	switch s {
	case Primary:
		return contract.SidePrimary
	case Standby:
		return contract.SideStandby
	}
	return "unset"
}

// Valid reports whether s is Primary or Standby.
func (s Side) Valid() bool { return s == Primary || s == Standby }

// Other returns the other side (Primary for an unset side).
func (s Side) Other() Side {
	if s == Primary {
		return Standby
	}
	return Primary
}

// ParseSide parses "primary" or "standby".
func ParseSide(s string) (Side, error) {
	switch s {
	case contract.SidePrimary:
		return Primary, nil
	case contract.SideStandby:
		return Standby, nil
	}
	return 0, fmt.Errorf("%w: %q (want primary or standby)", ErrUnknownSide, s)
}

// Service is a service the read side selects a side for. The zero value is
// unset; the valid values index small fixed arrays on the hot path.
type Service uint8

// Services, in the order a Tag lists them.
const (
	Budget Service = 1 + iota
	Pacer
	Bidder
)

// NumServices is the number of services.
const NumServices = 3

// Services returns every service, in tag order.
func Services() []Service { return []Service{Budget, Pacer, Bidder} }

// String returns the service's name as in contract.Services ("budget",
// "pacer", "bidder"), or "unset".
func (s Service) String() string {
	switch s {
	case Budget:
		return contract.StageBudget
	case Pacer:
		return contract.StagePacer
	case Bidder:
		return contract.StageBidder
	}
	return "unset"
}

// Valid reports whether s is one of the services.
func (s Service) Valid() bool { return s >= Budget && s <= Bidder }

// ParseService parses a service name.
func ParseService(s string) (Service, error) {
	if v := serviceByName(s); v != 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%w: %q (want budget, pacer or bidder)", ErrUnknownService, s)
}

// serviceByName is ParseService without the error, for the hot path.
func serviceByName(s string) Service {
	switch s {
	case contract.StageBudget:
		return Budget
	case contract.StagePacer:
		return Pacer
	case contract.StageBidder:
		return Bidder
	}
	return 0
}

// ServiceSet is a set of services, e.g. the services of a campaign whose
// values came from the other side.
type ServiceSet uint8

// Add returns the set with svc added.
func (s ServiceSet) Add(svc Service) ServiceSet { return s | 1<<svc }

// Has reports whether svc is in the set.
func (s ServiceSet) Has(svc Service) bool { return s&(1<<svc) != 0 }

// Empty reports whether the set has no service.
func (s ServiceSet) Empty() bool { return s == 0 }

// Slice returns the names of the services in the set, in tag order.
func (s ServiceSet) Slice() []string {
	var out []string
	for _, svc := range Services() {
		if s.Has(svc) {
			out = append(out, svc.String())
		}
	}
	return out
}
