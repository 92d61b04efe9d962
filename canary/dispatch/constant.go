package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/replay"
)

// repeatGenerations bounds the clone generations a constant target's repeats
// use; after the last one they start again at the first.
const repeatGenerations = 64

// constantFeed is a constant target's bounded queue. The dispatcher pushes
// the sampled copies; the pacer takes one every 1/rate seconds: the oldest
// copy not sent yet, or when none is waiting (live is slower than the rate)
// a repeat of the copies sent last, in order, each repeat generation under
// clone ids of its own (repeatEvent). At most size copies wait and size are
// kept for repeats; a copy that finds the queue full is dropped (over_rate).
type constantFeed struct {
	size int
	wake chan struct{}

	mu    sync.Mutex
	queue []*kgo.Record
	hist  []*kgo.Record // ring of the copies sent last
	hpos  int           // next slot of hist to overwrite
	rpos  int           // next copy of hist to repeat
	gen   int           // repeat generation, from 1
	seq   uint64
	clone map[string]bool // clone campaigns whose budget row was sent
}

func newConstantFeed(size int) *constantFeed {
	return &constantFeed{size: size, wake: make(chan struct{}, 1), clone: map[string]bool{}}
}

// push queues a copy; false when the queue is full.
func (f *constantFeed) push(r *kgo.Record) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) >= f.size {
		return false
	}
	f.queue = append(f.queue, r)
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return true
}

func (f *constantFeed) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// next returns the copy due now: a queued one, else a repeat (gen > 0,
// with seq for its event id), else nil when nothing was ever queued.
func (f *constantFeed) next() (r *kgo.Record, gen int, seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) > 0 {
		r = f.queue[0]
		f.queue[0] = nil
		f.queue = f.queue[1:]
		if len(f.hist) < f.size {
			f.hist = append(f.hist, r)
		} else {
			f.hist[f.hpos] = r
			f.hpos = (f.hpos + 1) % f.size
		}
		return r, 0, 0
	}
	if len(f.hist) == 0 {
		return nil, 0, 0
	}
	if f.rpos == 0 {
		f.gen = f.gen%repeatGenerations + 1
	}
	r = f.hist[(f.hpos+f.rpos)%len(f.hist)]
	f.rpos = (f.rpos + 1) % len(f.hist)
	f.seq++
	return r, f.gen, f.seq
}

// firstUse reports whether campaign is used by a repeat for the first time
// (its budget row must go first), and remembers it.
func (f *constantFeed) firstUse(campaign string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clone[campaign] {
		return false
	}
	f.clone[campaign] = true
	return true
}

// budgetRow looks up the live budgets row of a campaign.
type budgetRow func(campaign string) (value []byte, ok bool)

// pace sends the feed's copies at rate records per second with the replay
// pacer until ctx ends. A repeat's clone campaign gets its original's
// budget row (from rows) before its first event.
func (s *sender) pace(ctx context.Context, rate float64, rows budgetRow) {
	defer close(s.done)
	p := replay.NewFixedRate(rate, replay.DefaultCatchUp)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		due := p.Due(time.Now(), time.Time{})
		if wait := time.Until(due); wait > 0 {
			t.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		r, gen, seq := s.feed.next()
		if r == nil {
			select { // nothing sampled yet: wait for the first copy
			case <-ctx.Done():
				return
			case <-s.feed.wake:
				continue
			}
		}
		if gen > 0 {
			s.repeat(r, gen, seq, rows)
		} else {
			s.produce(r)
		}
		p.Released(time.Now())
	}
}

func (s *sender) repeat(r *kgo.Record, gen int, seq uint64, rows budgetRow) {
	c, err := repeatEvent(r, gen, seq, time.Now())
	if err != nil {
		s.drop(err)
		return
	}
	clone := string(c.Key)
	if s.feed.firstUse(clone) {
		base, k := contract.DarkCampaignOf(clone)
		if v, ok := rows(base); ok {
			s.budget([]byte(base), v, k, contract.DarkRowSample)
		}
	}
	s.produce(c)
}
