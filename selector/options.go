package selector

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotpair/hotpair/contract"
)

// Option configures a Selector (New).
type Option interface{ applySelector(*cfg) }

// CommonOption configures any component of this package: a Selector, Views,
// a Retriever or a Server.
type CommonOption interface {
	Option
	ViewsOption
	RetrieverOption
}

type common struct {
	logger *slog.Logger
	reg    prometheus.Registerer
	now    func() time.Time // the clock of ages and lags; tests set it
}

func defaultCommon() common {
	return common{logger: slog.New(slog.DiscardHandler), reg: prometheus.NewRegistry(), now: time.Now}
}

// withClock sets the clock that ages and lags are measured with (tests:
// a snapshot's age grows without waiting). Default time.Now.
func withClock(now func() time.Time) CommonOption { return commonOpt(func(c *common) { c.now = now }) }

type commonOpt func(*common)

func (o commonOpt) applySelector(c *cfg)           { o(&c.common) }
func (o commonOpt) applyViews(c *viewsCfg)         { o(&c.common) }
func (o commonOpt) applyRetriever(c *retrieverCfg) { o(&c.common) }

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) CommonOption {
	return commonOpt(func(c *common) {
		if l != nil {
			c.logger = l
		}
	})
}

// WithRegisterer sets the Prometheus registerer of the component's metrics.
// Default: a private registry (metrics are kept but not exported).
func WithRegisterer(r prometheus.Registerer) CommonOption {
	return commonOpt(func(c *common) {
		if r != nil {
			c.reg = r
		}
	})
}

type cfg struct {
	common
	servers        []string
	root           string
	services       []contract.Service
	defaultSide    contract.Side
	sessionTimeout time.Duration
	auth           *contract.Credentials
	retryMin       time.Duration
	retryMax       time.Duration
}

func defaultCfg() cfg {
	return cfg{
		common:         defaultCommon(),
		root:           contract.DefaultRoot,
		services:       contract.Services(),
		defaultSide:    contract.Primary,
		sessionTimeout: 10 * time.Second,
		retryMin:       100 * time.Millisecond,
		retryMax:       5 * time.Second,
	}
}

type selectorOpt func(*cfg)

func (o selectorOpt) applySelector(c *cfg) { o(c) }

// WithRoot sets the ZooKeeper root of hotpair's znodes. Default "/hotpair".
func WithRoot(root string) Option { return selectorOpt(func(c *cfg) { c.root = root }) }

// WithServices sets the services to watch. Default: budget, pacer, bidder.
// A service that is not watched always answers the default side.
func WithServices(svcs ...contract.Service) Option {
	return selectorOpt(func(c *cfg) { c.services = append([]contract.Service(nil), svcs...) })
}

// WithDefaultSide sets the side answered before a service's selection has
// been read from ZooKeeper. Default Primary (the preferred side).
func WithDefaultSide(s contract.Side) Option { return selectorOpt(func(c *cfg) { c.defaultSide = s }) }

// WithSessionTimeout sets the ZooKeeper session timeout. Default 10s.
func WithSessionTimeout(d time.Duration) Option {
	return selectorOpt(func(c *cfg) { c.sessionTimeout = d })
}

// WithAuth adds a digest identity to the ZooKeeper session, for ensembles
// where the selection is not world-readable. Default none.
func WithAuth(c *contract.Credentials) Option { return selectorOpt(func(cf *cfg) { cf.auth = c }) }

// WithRetryBackoff sets the bounds of the backoff between failed reads of a
// znode while the session is up. Default 100ms to 5s.
func WithRetryBackoff(lo, hi time.Duration) Option {
	return selectorOpt(func(c *cfg) { c.retryMin, c.retryMax = lo, hi })
}

func (c *cfg) validate() error {
	switch {
	case len(c.servers) == 0:
		return fmt.Errorf("%w: New needs at least one ZooKeeper server", ErrInvalidOption)
	case !c.defaultSide.Valid():
		return fmt.Errorf("%w: WithDefaultSide(%d) is not Primary or Standby", ErrInvalidOption, c.defaultSide)
	case len(c.services) == 0:
		return fmt.Errorf("%w: WithServices needs at least one service", ErrInvalidOption)
	case c.sessionTimeout < time.Second:
		return fmt.Errorf("%w: WithSessionTimeout(%s) is below 1s", ErrInvalidOption, c.sessionTimeout)
	case c.retryMin <= 0 || c.retryMax < c.retryMin:
		return fmt.Errorf("%w: WithRetryBackoff(%s, %s) needs 0 < lo <= hi", ErrInvalidOption, c.retryMin, c.retryMax)
	}
	seen := map[contract.Service]bool{}
	for _, s := range c.services {
		if !s.Valid() {
			return fmt.Errorf("%w: WithServices: %d is not a service", ErrInvalidOption, s)
		}
		if seen[s] {
			return fmt.Errorf("%w: WithServices: %s is listed twice", ErrInvalidOption, s)
		}
		seen[s] = true
	}
	return nil
}
