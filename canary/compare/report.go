package compare

import (
	"fmt"
	"time"
)

// Verdict is the judgement of a target, a field or the resources.
type Verdict uint8

const (
	// Pass: the dark target differs from live no more than the noise.
	Pass Verdict = 1 + iota
	// Regression: it differs beyond the thresholds.
	Regression
	// InsufficientData: too few points to judge, or none lately.
	InsufficientData
	// RateMismatch (resources only): dark instances do not carry a live
	// instance's input rate, so their resources are not comparable.
	RateMismatch
)

var verdictNames = map[Verdict]string{Pass: "pass", Regression: "regression", InsufficientData: "insufficient data", RateMismatch: "rate mismatch"}

func (v Verdict) String() string {
	if s, ok := verdictNames[v]; ok {
		return s
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// MarshalText writes the verdict's name.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a verdict's name.
func (v *Verdict) UnmarshalText(b []byte) error {
	for k, s := range verdictNames {
		if s == string(b) {
			*v = k
			return nil
		}
	}
	return fmt.Errorf("compare: unknown verdict %q", b)
}

// ExitCode is the exit status of `hotpair dark report` for the verdict: 0
// pass, 1 regression, 3 insufficient data (and anything else).
func (v Verdict) ExitCode() int {
	switch v {
	case Pass:
		return 0
	case Regression:
		return 1
	}
	return 3
}

// Report is the comparator's judgement of every dark target (GET /api/v1/dark).
type Report struct {
	At time.Time `json:"at"`
	// Verdict is the worst of the targets': regression over insufficient
	// data over pass; insufficient data without any target.
	Verdict Verdict        `json:"verdict"`
	Targets []TargetReport `json:"targets"`
	Rules   Rules          `json:"rules"`
}

// TargetReport is one dark target's judgement over the horizon.
type TargetReport struct {
	Name    string  `json:"name"`
	Source  string  `json:"source"`
	Verdict Verdict `json:"verdict"`
	// Reasons say why the verdict is not pass, one line each.
	Reasons []string `json:"reasons,omitempty"`
	// Campaigns is how many distinct sampled campaigns were compared
	// (found missing included).
	Campaigns int `json:"campaigns"`
	// Sampled is how many campaigns the target was sent (its budgets
	// topic's keys, clones left out).
	Sampled int `json:"sampled"`
	// Points per output: compared (campaign, update) pairs, dark vs live
	// (values found missing on dark included).
	Points map[string]int `json:"points"`
	// Missing per output: distinct sampled campaigns whose live value the
	// dark target did not write, within the horizon.
	Missing map[string]int `json:"missing"`
	// Held: points with differences found and not counted yet (the rules'
	// hold); Withdrawn: those a gap in the copy explained, within the
	// horizon (a budget row with reason gap came for their campaign).
	Held      int `json:"held"`
	Withdrawn int `json:"withdrawn"`
	// LastPoint is when a dark value was last compared.
	LastPoint time.Time      `json:"last_point,omitzero"`
	Fields    []FieldReport  `json:"fields"`
	Resources ResourceReport `json:"resources"`
}

// FieldReport is one output field of one target.
type FieldReport struct {
	Output  string  `json:"output"`
	Field   string  `json:"field"`
	Exact   bool    `json:"exact"`
	Verdict Verdict `json:"verdict"`
	// Raw: dark vs its source side. Noise: primary vs standby, on the same
	// sampled campaigns. Rates are differing points / points; sizes the
	// mean size of a difference (outdiff.Diff.Size).
	RawPoints     int     `json:"raw_points"`
	RawDiffs      int     `json:"raw_diffs"`
	RawRate       float64 `json:"raw_rate"`
	RawMeanSize   float64 `json:"raw_mean_size"`
	NoisePoints   int     `json:"noise_points"`
	NoiseDiffs    int     `json:"noise_diffs"`
	NoiseRate     float64 `json:"noise_rate"`
	NoiseMeanSize float64 `json:"noise_mean_size"`
	// Unexplained counts, for an exact field, dark differences on campaigns
	// whose primary and standby agreed in the same round.
	Unexplained int `json:"unexplained,omitempty"`
	// RawMissing and NoiseMissing count, among the differing points, the
	// values of sampled campaigns live had and the dark target (the
	// standby) did not write at all (docs/dark.md, "Missing campaigns").
	RawMissing   int `json:"raw_missing,omitempty"`
	NoiseMissing int `json:"noise_missing,omitempty"`
	// Withdrawn counts the differences of the field that were held and
	// withdrawn within the horizon: a gap in the copy explained them.
	Withdrawn int `json:"withdrawn,omitempty"`
	// Worst are the campaigns with the largest differences, both values.
	Worst []Example `json:"worst,omitempty"`
}

// Example is one campaign's differing values.
type Example struct {
	Campaign string  `json:"campaign"`
	Live     string  `json:"live"`
	Dark     string  `json:"dark"`
	Size     float64 `json:"size"`
	// Missing: the dark target wrote no value (Dark is "missing").
	Missing bool      `json:"missing,omitempty"`
	At      time.Time `json:"at"`
}

// ResourceReport is the per-instance resource comparison of one target.
type ResourceReport struct {
	Verdict Verdict       `json:"verdict"`
	Reasons []string      `json:"reasons,omitempty"`
	Rows    []ResourceRow `json:"rows"`
}

// ResourceRow is one stage's figure, medians over instance windows.
type ResourceRow struct {
	Stage  string `json:"stage"`
	Metric string `json:"metric"`
	// Live is the source side's median, Dark the target's; Primary and
	// Standby the live sides' (their spread is the noise).
	Live    float64 `json:"live"`
	Dark    float64 `json:"dark"`
	Primary float64 `json:"primary"`
	Standby float64 `json:"standby"`
	// Limit is the largest dark median that passes; P the Mann-Whitney
	// two-sided p-value of dark vs live.
	Limit   float64 `json:"limit"`
	P       float64 `json:"p"`
	LiveN   int     `json:"live_n"`
	DarkN   int     `json:"dark_n"`
	Verdict Verdict `json:"verdict"`
}
