package selector

import (
	"errors"
	"testing"

	"github.com/hotpair/hotpair/contract"
)

const (
	goodBudgetStandby = `{"v":1,"service":"budget","active":"standby","preferred":"primary","epoch":4,"reason":"primary lag_high"}`
	goodNoService     = `{"v":1,"active":"primary","epoch":5}`
)

func TestJudge(t *testing.T) {
	// a10 is the selection applied at mzxid 10 in the states before a read.
	a10 := write{10, goodBudgetStandby}
	bad := `{"v":1,"active":`
	cases := []struct {
		name     string
		before   znodeState
		read     read
		want     verdict
		wantSide contract.Side
		after    znodeState
	}{
		{"first valid read applies", znodeState{}, read{true, 10, []byte(goodBudgetStandby)},
			verdictApply, contract.Standby, znodeState{applied: a10}},
		{"a document without service applies", znodeState{}, read{true, 10, []byte(goodNoService)},
			verdictApply, contract.Primary, znodeState{applied: write{10, goodNoService}}},
		{"a re-read of the same write is the same", znodeState{applied: a10}, read{true, 10, []byte(goodBudgetStandby)},
			verdictSame, 0, znodeState{applied: a10}},
		{"a new write applies", znodeState{applied: a10}, read{true, 11, []byte(goodNoService)},
			verdictApply, contract.Primary, znodeState{applied: write{11, goodNoService}}},
		{"a rebuilt ensemble's write with the mzxid read before applies", znodeState{applied: a10}, read{true, 10, []byte(goodNoService)},
			verdictApply, contract.Primary, znodeState{applied: write{10, goodNoService}}},
		{"malformed JSON is rejected", znodeState{applied: a10}, read{true, 11, []byte(bad)},
			verdictRejected, 0, znodeState{applied: a10, rejected: write{11, bad}}},
		{"an unknown side is rejected", znodeState{applied: a10}, read{true, 11, []byte(`{"v":1,"active":"tertiary","epoch":5}`)},
			verdictRejected, 0, znodeState{applied: a10, rejected: write{11, `{"v":1,"active":"tertiary","epoch":5}`}}},
		{"another version is rejected", znodeState{applied: a10}, read{true, 11, []byte(`{"v":2,"active":"primary","epoch":5}`)},
			verdictRejected, 0, znodeState{applied: a10, rejected: write{11, `{"v":2,"active":"primary","epoch":5}`}}},
		{"another service's document is rejected", znodeState{applied: a10}, read{true, 11, []byte(`{"v":1,"service":"pacer","active":"primary","epoch":5}`)},
			verdictRejected, 0, znodeState{applied: a10, rejected: write{11, `{"v":1,"service":"pacer","active":"primary","epoch":5}`}}},
		{"empty data is rejected", znodeState{}, read{true, 11, nil},
			verdictRejected, 0, znodeState{rejected: write{11, ""}}},
		{"the same bad write read again is not counted again", znodeState{applied: a10, rejected: write{11, bad}}, read{true, 11, []byte(bad)},
			verdictRejectedAgain, 0, znodeState{applied: a10, rejected: write{11, bad}}},
		{"a good write after a bad one applies", znodeState{applied: a10, rejected: write{11, bad}}, read{true, 12, []byte(goodBudgetStandby)},
			verdictApply, contract.Standby, znodeState{applied: write{12, goodBudgetStandby}, rejected: write{11, bad}}},
		{"missing before any read is quiet", znodeState{}, read{},
			verdictMissing, 0, znodeState{missing: true}},
		{"deleted after a read is counted", znodeState{applied: a10}, read{},
			verdictDeleted, 0, znodeState{applied: a10, missing: true}},
		{"deleted after a bad write is counted", znodeState{rejected: write{11, bad}}, read{},
			verdictDeleted, 0, znodeState{rejected: write{11, bad}, missing: true}},
		{"still deleted is quiet", znodeState{applied: a10, missing: true}, read{},
			verdictMissing, 0, znodeState{applied: a10, missing: true}},
		{"re-created applies", znodeState{applied: a10, missing: true}, read{true, 20, []byte(goodBudgetStandby)},
			verdictApply, contract.Standby, znodeState{applied: write{20, goodBudgetStandby}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			after, v, doc, side, err := judge(c.before, contract.ServiceBudget, c.read)
			if v != c.want {
				t.Fatalf("verdict = %s, want %s (err %v)", v, c.want, err)
			}
			if after != c.after {
				t.Errorf("state = %+v, want %+v", after, c.after)
			}
			if side != c.wantSide {
				t.Errorf("side = %s, want %s", side, c.wantSide)
			}
			if (v == verdictApply) != (doc != nil) {
				t.Errorf("doc = %v for verdict %s", doc, v)
			}
			if v == verdictRejected && !errors.Is(err, contract.ErrInvalidDocument) && !errors.Is(err, contract.ErrUnknownSide) {
				t.Errorf("rejection error %v does not say why", err)
			}
			if v.fresh() != (v == verdictApply || v == verdictSame) {
				t.Errorf("fresh() wrong for %s", v)
			}
		})
	}
}
