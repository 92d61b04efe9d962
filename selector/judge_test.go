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
	cases := []struct {
		name     string
		before   znodeState
		read     read
		want     verdict
		wantSide contract.Side
		after    znodeState
	}{
		{"first valid read applies", znodeState{}, read{true, 10, []byte(goodBudgetStandby)},
			verdictApply, contract.Standby, znodeState{applied: 10}},
		{"a document without service applies", znodeState{}, read{true, 10, []byte(goodNoService)},
			verdictApply, contract.Primary, znodeState{applied: 10}},
		{"a re-read of the same write is the same", znodeState{applied: 10}, read{true, 10, []byte(goodBudgetStandby)},
			verdictSame, 0, znodeState{applied: 10}},
		{"a new write applies", znodeState{applied: 10}, read{true, 11, []byte(goodNoService)},
			verdictApply, contract.Primary, znodeState{applied: 11}},
		{"malformed JSON is rejected", znodeState{applied: 10}, read{true, 11, []byte(`{"v":1,"active":`)},
			verdictRejected, 0, znodeState{applied: 10, rejected: 11}},
		{"an unknown side is rejected", znodeState{applied: 10}, read{true, 11, []byte(`{"v":1,"active":"tertiary","epoch":5}`)},
			verdictRejected, 0, znodeState{applied: 10, rejected: 11}},
		{"another version is rejected", znodeState{applied: 10}, read{true, 11, []byte(`{"v":2,"active":"primary","epoch":5}`)},
			verdictRejected, 0, znodeState{applied: 10, rejected: 11}},
		{"another service's document is rejected", znodeState{applied: 10}, read{true, 11, []byte(`{"v":1,"service":"pacer","active":"primary","epoch":5}`)},
			verdictRejected, 0, znodeState{applied: 10, rejected: 11}},
		{"empty data is rejected", znodeState{}, read{true, 11, nil},
			verdictRejected, 0, znodeState{rejected: 11}},
		{"the same bad write read again is not counted again", znodeState{applied: 10, rejected: 11}, read{true, 11, []byte(`x`)},
			verdictRejectedAgain, 0, znodeState{applied: 10, rejected: 11}},
		{"a good write after a bad one applies", znodeState{applied: 10, rejected: 11}, read{true, 12, []byte(goodBudgetStandby)},
			verdictApply, contract.Standby, znodeState{applied: 12, rejected: 11}},
		{"missing before any read is quiet", znodeState{}, read{},
			verdictMissing, 0, znodeState{missing: true}},
		{"deleted after a read is counted", znodeState{applied: 10}, read{},
			verdictDeleted, 0, znodeState{applied: 10, missing: true}},
		{"deleted after a bad write is counted", znodeState{rejected: 11}, read{},
			verdictDeleted, 0, znodeState{rejected: 11, missing: true}},
		{"still deleted is quiet", znodeState{applied: 10, missing: true}, read{},
			verdictMissing, 0, znodeState{applied: 10, missing: true}},
		{"re-created applies", znodeState{applied: 10, missing: true}, read{true, 20, []byte(goodBudgetStandby)},
			verdictApply, contract.Standby, znodeState{applied: 20}},
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
