package pipeline

import (
	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/statestore"
)

// budgetStatus is the budget rule: lifetime cap first (it never resets), then
// the daily cap; a limit of 0 means no limit; a campaign without a budget row
// is reported as such and never capped.
func budgetStatus(l *statestore.Ledger, b *statestore.BudgetRow) string {
	switch {
	case b == nil:
		return contract.StatusNoBudget
	case b.LifetimeMicros > 0 && l.SpentLifetime >= b.LifetimeMicros:
		return contract.StatusLifetimeCapped
	case b.DailyMicros > 0 && l.SpentToday >= b.DailyMicros:
		return contract.StatusDailyCapped
	}
	return contract.StatusActive
}
