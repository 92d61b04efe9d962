package selector

import (
	"fmt"
	"math"
	"net/http"

	"github.com/hotpair/hotpair/contract"
)

// SnapshotSource is where a Retriever gets its own snapshot from: a Selector.
type SnapshotSource interface{ Snapshot() *Snapshot }

// Retriever answers retrieval requests from the views: for each candidate
// campaign, the budget status, pacing rate and bid multiplier from the side
// the request's tag names per service.
type Retriever struct {
	views *Views
	own   SnapshotSource
	cfg   retrieverCfg
	m     *retrieverMetrics
}

// Candidate is one campaign's answer.
type Candidate struct {
	Campaign string
	// Status is the budget status; zero ("unknown") when neither side has
	// one (e.g. a campaign without spend yet): such a campaign serves.
	Status     BudgetState
	Rate       float64 // pacing rate; the default rate when Found lacks Pacer
	Multiplier float64 // bid multiplier; the default when Found lacks Bidder
	// Found are the services with a value on either side; the others carry
	// the defaults.
	Found ServiceSet
	// Fallback are the services whose value came from the side the tag did
	// not name, because the named side had no value for the campaign yet.
	Fallback ServiceSet
}

// Result is the answer to one request.
type Result struct {
	// Tag is the selection the answer follows.
	Tag Tag
	// OwnSnapshot is set when the request's tag was missing or did not
	// parse, so the retriever's own snapshot was used instead.
	OwnSnapshot bool
	// Serve are the campaigns that may serve, in request order: active,
	// no_budget, or without a status.
	Serve []Candidate
	// Capped are the campaigns filtered out: daily_capped or lifetime_capped.
	Capped []Candidate
	// Fallbacks counts the values answered from the other side.
	Fallbacks int
}

// NewRetriever returns a retriever of views that falls back to own's
// snapshot for requests without a usable tag.
func NewRetriever(views *Views, own SnapshotSource, opts ...RetrieverOption) (*Retriever, error) {
	c := retrieverCfg{common: defaultCommon(), defaultRate: 1, defaultMultiplier: 1}
	for _, o := range opts {
		o.applyRetriever(&c)
	}
	switch {
	case views == nil:
		return nil, fmt.Errorf("%w: NewRetriever needs views", ErrInvalidOption)
	case own == nil:
		return nil, fmt.Errorf("%w: NewRetriever needs a snapshot source (a Selector)", ErrInvalidOption)
	case !(c.defaultRate >= 0 && c.defaultRate <= 1):
		return nil, fmt.Errorf("%w: WithDefaultRate(%v) is outside [0,1]", ErrInvalidOption, c.defaultRate)
	case !(c.defaultMultiplier >= 0) || math.IsInf(c.defaultMultiplier, 0):
		return nil, fmt.Errorf("%w: WithDefaultMultiplier(%v) must be a finite number >= 0", ErrInvalidOption, c.defaultMultiplier)
	}
	return &Retriever{views: views, own: own, cfg: c, m: newRetrieverMetrics(c.reg)}, nil
}

// Resolve returns the tag to answer a request with raw tag value from: the
// request's tag when it parses, else the retriever's own snapshot (counted;
// never an error for the request). own is true in the second case.
func (r *Retriever) Resolve(raw string) (t Tag, own bool) {
	if raw == "" {
		r.m.tagInvalid[0].Inc()
		return r.own.Snapshot().Tag(), true
	}
	t, err := ParseTag(raw)
	if err != nil {
		r.m.tagInvalid[1].Inc()
		return r.own.Snapshot().Tag(), true
	}
	return t, false
}

// ResolveHeader is Resolve for the TagHeader of a request.
func (r *Retriever) ResolveHeader(h http.Header) (Tag, bool) { return r.Resolve(h.Get(TagHeader)) }

// Retrieve answers one request: rawTag is the request's TagHeader value
// ("" when it has none), campaigns its candidates.
func (r *Retriever) Retrieve(rawTag string, campaigns []string) Result {
	t, own := r.Resolve(rawTag)
	res := r.RetrieveTag(t, campaigns)
	res.OwnSnapshot = own
	return res
}

// RetrieveTag answers one request whose tag is already parsed (e.g. taken
// from a context with TagFromContext). An invalid tag uses the retriever's
// own snapshot.
func (r *Retriever) RetrieveTag(t Tag, campaigns []string) Result {
	r.m.requests.Inc()
	res := Result{Tag: t, Serve: make([]Candidate, 0, len(campaigns))}
	if !t.Valid() {
		r.m.tagInvalid[0].Inc()
		res.Tag, res.OwnSnapshot = r.own.Snapshot().Tag(), true
	}
	for _, id := range campaigns {
		c := r.candidate(res.Tag, id)
		res.Fallbacks += bits(c.Fallback)
		if c.Status.Capped() {
			res.Capped = append(res.Capped, c)
			r.m.capped.Inc()
			continue
		}
		res.Serve = append(res.Serve, c)
		r.m.serve.Inc()
	}
	return res
}

// candidate looks up every service's value of one campaign.
func (r *Retriever) candidate(t Tag, id string) Candidate {
	c := Candidate{Campaign: id, Rate: r.cfg.defaultRate, Multiplier: r.cfg.defaultMultiplier}
	i, ok := r.views.keys.lookup(id)
	if !ok {
		for _, svc := range contract.Services() {
			r.views.m.misses[svc].Inc()
		}
		return c
	}
	entries := campaignEntries{v: r.views, i: i}
	for _, svc := range contract.Services() {
		want := t.Side(svc)
		e, from, ok := r.views.pick(&entries, svc, want)
		if !ok {
			continue
		}
		c.Found = c.Found.Add(svc)
		if from != want {
			c.Fallback = c.Fallback.Add(svc)
		}
		switch svc {
		case contract.ServiceBudget:
			c.Status = e.status
		case contract.ServicePacer:
			c.Rate = e.rate
		case contract.ServiceBidder:
			c.Multiplier = e.multiplier
		}
	}
	return c
}

func bits(s ServiceSet) int {
	n := 0
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}

// Lag reports how far behind each view is (Views.Lag).
func (r *Retriever) Lag() []ViewLag { return r.views.Lag() }

// RetrieverOption configures a Retriever (NewRetriever).
type RetrieverOption interface{ applyRetriever(*retrieverCfg) }

type retrieverOpt func(*retrieverCfg)

func (o retrieverOpt) applyRetriever(c *retrieverCfg) { o(c) }

type retrieverCfg struct {
	common
	defaultRate       float64
	defaultMultiplier float64
}

// WithDefaultRate sets the pacing rate of a campaign that neither side has
// a pacing value for. Default 1 (no throttling).
func WithDefaultRate(r float64) RetrieverOption {
	return retrieverOpt(func(c *retrieverCfg) { c.defaultRate = r })
}

// WithDefaultMultiplier sets the bid multiplier of a campaign that neither
// side has a multiplier for. Default 1.
func WithDefaultMultiplier(m float64) RetrieverOption {
	return retrieverOpt(func(c *retrieverCfg) { c.defaultMultiplier = m })
}
