package sandbox

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A campaign time zone this machine does not know stops the sandbox at
// start with the zone named, instead of a budget sized in no zone at all.
func TestCampaignsNeedKnownZones(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	cs, err := newCampaigns(campaignZones, 12, 40, time.Now(), rng)
	if err != nil || len(cs) != 12 || cs[1].Budget == nil || cs[1].Budget.Timezone != "America/New_York" || cs[1].Budget.DailyMicros <= 0 {
		t.Fatalf("campaigns in the sandbox's zones: %v, %+v", err, cs)
	}
	_, err = newCampaigns([]string{"UTC", "Mars/Olympus_Mons"}, 4, 40, time.Now(), rng)
	if err == nil || !strings.Contains(err.Error(), "Mars/Olympus_Mons") || !strings.Contains(err.Error(), "camp-001") {
		t.Fatalf("an unknown zone: %v, want an error naming it and its campaign", err)
	}
}
