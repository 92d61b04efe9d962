package selector

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/internal/zktest"
)

// Hot path: Active, against the cheapest possible snapshot read (a plain
// atomic pointer load of a struct) and a map lookup by name.
func BenchmarkActive(b *testing.B) {
	sel, _ := offlineSelector(b)
	feed(b, sel, contract.ServiceBudget, contract.Standby, 4)
	var sink contract.Side
	b.Run("Selector.Active", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			sink ^= sel.Active(contract.Service(1 + i%contract.NumServices))
		}
	})
	b.Run("Selector.ActiveByName", func(b *testing.B) {
		b.ReportAllocs()
		names := []string{"budget", "pacer", "bidder"}
		for i := 0; b.Loop(); i++ {
			sink ^= sel.ActiveByName(names[i%3])
		}
	})
	b.Run("Selector.Active/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var s contract.Side
			for i := 0; pb.Next(); i++ {
				s ^= sel.Active(contract.Service(1 + i%contract.NumServices))
			}
			_ = s
		})
	})
	b.Run("baseline/atomic.Pointer.Load", func(b *testing.B) {
		b.ReportAllocs()
		var p atomic.Pointer[[4]contract.Side]
		p.Store(&[4]contract.Side{contract.Primary, contract.Standby, contract.Primary, contract.Primary})
		for i := 0; b.Loop(); i++ {
			sink ^= p.Load()[1+i%contract.NumServices]
		}
	})
	b.Run("baseline/map[string]Side", func(b *testing.B) {
		b.ReportAllocs()
		m := map[string]contract.Side{"budget": contract.Standby, "pacer": contract.Primary, "bidder": contract.Primary}
		names := []string{"budget", "pacer", "bidder"}
		for i := 0; b.Loop(); i++ {
			sink ^= m[names[i%3]]
		}
	})
	_ = sink
}

// Tags: encode and parse, against strconv on the same three epochs.
func BenchmarkTag(b *testing.B) {
	tag := Tag{}.WithSide(contract.ServiceBudget, contract.Standby, 1234).WithSide(contract.ServicePacer, contract.Primary, 98).WithSide(contract.ServiceBidder, contract.Primary, 7)
	enc := tag.String()
	buf := make([]byte, 0, maxTagLen)
	sel, _ := offlineSelector(b)
	feed(b, sel, contract.ServiceBudget, contract.Standby, 1234)
	b.Run("encode/Tag.AppendTo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = tag.AppendTo(buf[:0])
		}
	})
	b.Run("encode/Snapshot.TagString", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			n += len(sel.Snapshot().TagString())
		}
		_ = n
	})
	b.Run("parse/ParseTag", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseTag(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse/ParseTag-malformed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ParseTag("1.s1234.x98.p7")
		}
	})
	b.Run("baseline/strconv.AppendInt-x3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = strconv.AppendInt(strconv.AppendInt(strconv.AppendInt(buf[:0], 1234, 10), 98, 10), 7, 10)
		}
	})
	b.Run("baseline/strconv.ParseInt-x3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range []string{"1234", "98", "7"} {
				if _, err := strconv.ParseInt(s, 10, 64); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

const benchCampaigns = 1 << 20 // 1,048,576

var (
	benchOnce  sync.Once
	benchIDs   []string
	benchViews *Views
	benchMem   struct{ index, perSide, naivePerSide float64 }
	benchNaive [3]*naiveView
)

// naiveView is the baseline: one map per side, keyed by campaign id, as a
// goka view or a plain map-per-topic design would hold it.
type naiveView struct {
	mu sync.RWMutex
	m  map[string]entry
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// loadBench loads 1M campaigns into both sides of views (three values each)
// and the same into the naive baseline, measuring the heap each takes.
func loadBench(b *testing.B) {
	benchOnce.Do(func() {
		benchIDs = make([]string, benchCampaigns)
		for i := range benchIDs {
			benchIDs[i] = fmt.Sprintf("cmp-%012d", i) // 16 bytes
		}
		rand.Shuffle(len(benchIDs), func(i, j int) { benchIDs[i], benchIDs[j] = benchIDs[j], benchIDs[i] })
		benchViews = offlineViews(b)
		v := benchViews
		set := func(n int) func(entry) entry {
			return func(e entry) entry {
				e.status, e.day, e.statusAt = StateActive, 20526, int64(n)
				e.rate, e.pacingAt, e.multiplier, e.multAt = 0.5, int64(n), 1.5, int64(n)
				e.has = allServices
				return e
			}
		}
		h0 := heapInUse()
		for _, id := range benchIDs {
			v.keys.intern([]byte(id)) // the consumer interns the record key bytes
		}
		h1 := heapInUse()
		for _, side := range []contract.Side{contract.Primary, contract.Standby} {
			for n, id := range benchIDs {
				i, _ := v.keys.lookup(id)
				v.sides[side].tab.update(i, set(n))
			}
		}
		h2 := heapInUse()
		for _, side := range []contract.Side{contract.Primary, contract.Standby} {
			nv := &naiveView{m: map[string]entry{}}
			for n, id := range benchIDs {
				nv.m[strings.Clone(id)] = set(n)(entry{}) // each side decodes its own key
			}
			benchNaive[side] = nv
		}
		h3 := heapInUse()
		benchMem.index = float64(h1-h0) / benchCampaigns
		benchMem.perSide = (float64(h2-h1)/2 + float64(h1-h0)/2) / benchCampaigns
		benchMem.naivePerSide = float64(h3-h2) / 2 / benchCampaigns
	})
}

// View Get over 1M campaigns in random order, and memory per campaign per
// side (key index shared by both sides counted half to each), against a map
// per side.
func BenchmarkViewsGet1M(b *testing.B) {
	loadBench(b)
	v, ids := benchViews, benchIDs
	mask := len(ids) - 1
	b.Run("Views.Get", func(b *testing.B) {
		b.ReportAllocs()
		var n float64
		for i := 0; b.Loop(); i++ {
			n += v.Get(contract.ServicePacer, ids[i&mask], contract.Primary).Rate
		}
		b.ReportMetric(benchMem.perSide, "B/campaign/side")
		b.ReportMetric(benchMem.index, "B/campaign-index")
	})
	b.Run("Views.Get/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var n float64
			for i := rand.IntN(len(ids)); pb.Next(); i++ {
				n += v.Get(contract.ServiceBidder, ids[i&mask], contract.Standby).Multiplier
			}
			_ = n
		})
	})
	b.Run("baseline/map-per-side", func(b *testing.B) {
		b.ReportAllocs()
		nv := benchNaive[contract.Primary]
		var n float64
		for i := 0; b.Loop(); i++ {
			nv.mu.RLock()
			e, ok := nv.m[ids[i&mask]]
			nv.mu.RUnlock()
			if ok {
				n += e.rate
			}
		}
		b.ReportMetric(benchMem.naivePerSide, "B/campaign/side")
	})
}

// Retrieve: one request of 100 candidates over 1M campaigns, each side
// holding all three values (so no fallbacks).
func BenchmarkRetrieve1M(b *testing.B) {
	loadBench(b)
	r, err := NewRetriever(benchViews, staticSource{newDefaultSnapshot(contract.Primary)})
	if err != nil {
		b.Fatal(err)
	}
	tag := "1.p3.s2.p1"
	// Requests of 100 distinct campaigns each, over all 1M (ids are shuffled).
	cands := make([][]string, benchCampaigns/100)
	for i := range cands {
		cands[i] = benchIDs[i*100 : i*100+100]
	}
	b.Run("Retriever.Retrieve", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if res := r.Retrieve(tag, cands[i%len(cands)]); len(res.Serve) != 100 {
				b.Fatal(len(res.Serve))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/candidate")
	})
	b.Run("baseline/3xViews.Get", func(b *testing.B) {
		b.ReportAllocs()
		t, _ := ParseTag(tag)
		for i := 0; b.Loop(); i++ {
			var n float64
			for _, id := range cands[i%len(cands)] {
				if benchViews.Get(contract.ServiceBudget, id, t.Side(contract.ServiceBudget)).Status.Capped() {
					continue
				}
				n += benchViews.Get(contract.ServicePacer, id, t.Side(contract.ServicePacer)).Rate + benchViews.Get(contract.ServiceBidder, id, t.Side(contract.ServiceBidder)).Multiplier
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/candidate")
	})
}

// Applying a record: decode and store, against decoding alone.
func BenchmarkViewApply(b *testing.B) {
	v := offlineViews(b)
	recs := make([][]byte, 4096)
	keys := make([][]byte, len(recs))
	for i := range recs {
		keys[i] = []byte(fmt.Sprintf("cmp-%012d", i))
		recs[i], _ = contract.Encode(contract.Pacing{V: 1, Campaign: string(keys[i]), Rate: 0.5, TargetMicros: 1000, ActualMicros: 900, UpdatedAt: testNow})
	}
	b.Run("decode+store", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if r := v.sides[contract.Primary].apply(contract.ServicePacer, keys[i%len(keys)], recs[i%len(recs)]); r != "" {
				b.Fatal(r)
			}
		}
	})
	b.Run("baseline/decode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := contract.DecodePacing(recs[i%len(recs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Watch propagation on loopback: from a ZooKeeper set to the snapshot
// changing, against a raw GetW watch firing on a plain session.
func BenchmarkWatchPropagation(b *testing.B) {
	addr, root := zktest.Addr(b), testRoot(b)
	w := newZKWriter(b, addr, root)
	w.set(contract.ServiceBudget, contract.Primary, 1)
	path := w.paths.Selection(contract.ServiceBudget)

	b.Run("selector", func(b *testing.B) {
		// Logs discarded: each iteration is a switch, logged at WARN.
		sel, _ := newTestSelector(b, addr, root, WithServices(contract.ServiceBudget), WithLogger(slog.New(slog.DiscardHandler)))
		waitUntil(b, &sel.changes, 10*time.Second, "the selection is read", sel.Ready)
		epoch, _ := sel.Snapshot().Epoch(contract.ServiceBudget)
		var lat []time.Duration
		for b.Loop() {
			epoch++
			data, _ := contract.Encode(selection(contract.ServiceBudget, contract.Side(1+epoch%2), epoch))
			snap := sel.Snapshot()
			start := time.Now()
			if _, err := w.conn.Set(path, data, -1); err != nil {
				b.Fatal(err)
			}
			<-snap.Changed()
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("baseline/raw-GetW", func(b *testing.B) {
		conn := zktest.Conn(b, addr, nil)
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			_, _, ch, err := conn.GetW(path)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if _, err := w.conn.Set(path, []byte(strconv.Itoa(i)), -1); err != nil {
				b.Fatal(err)
			}
			if ev := <-ch; ev.Type != zk.EventNodeDataChanged {
				b.Fatalf("event %v", ev)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
