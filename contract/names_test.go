package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"
)

// The enums read and write as their names everywhere a user sees them:
// fmt, JSON values and map keys, YAML, and back.
func TestEnumsReadAndWriteTheirNames(t *testing.T) {
	type doc struct {
		Side    Side            `json:"side" yaml:"side"`
		Service Service         `json:"service" yaml:"service"`
		Stage   Stage           `json:"stage" yaml:"stage"`
		Role    Role            `json:"role" yaml:"role"`
		Unset   Side            `json:"unset" yaml:"unset"`
		BySide  map[Side]int    `json:"by_side" yaml:"by_side"`
		BySvc   map[Service]int `json:"by_service" yaml:"by_service"`
	}
	d := doc{Side: Standby, Service: ServiceBidder, Stage: StageAggregator, Role: RoleDark,
		BySide: map[Side]int{Primary: 1, Standby: 2}, BySvc: map[Service]int{ServiceBudget: 1, ServicePacer: 2, ServiceBidder: 3}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"side":"standby","service":"bidder","stage":"aggregator","role":"dark","unset":"","by_side":{"primary":1,"standby":2},"by_service":{"bidder":3,"budget":1,"pacer":2}}`
	if string(b) != want {
		t.Fatalf("JSON\n got %s\nwant %s", b, want)
	}
	var back doc
	if err := json.Unmarshal(b, &back); err != nil || fmt.Sprint(back) != fmt.Sprint(d) {
		t.Fatalf("JSON round trip: %+v, %v", back, err)
	}
	var y doc
	if err := yaml.Unmarshal([]byte("side: primary\nservice: pacer\nstage: bidder\nrole: live\nby_side: {standby: 4}\n"), &y); err != nil {
		t.Fatal(err)
	}
	if y.Side != Primary || y.Service != ServicePacer || y.Stage != StageBidder || y.Role != RoleLive || y.BySide[Standby] != 4 {
		t.Fatalf("YAML: %+v", y)
	}
	if got := fmt.Sprintf("%s %v %q %s", Primary, ServiceBudget, StagePacer, RoleLive); got != `primary budget "pacer" live` {
		t.Fatalf("fmt: %s", got)
	}
	if err := json.Unmarshal([]byte(`{"side":"both"}`), &back); !errors.Is(err, ErrUnknownSide) {
		t.Fatalf("a side that is none: %v", err)
	}
}

func TestServiceStageAndSides(t *testing.T) {
	for _, svc := range Services() {
		st := svc.Stage()
		if st.String() != svc.String() {
			t.Errorf("%s: stage %s", svc, st)
		}
		if back, ok := st.Service(); !ok || back != svc {
			t.Errorf("%s: back %s %v", svc, back, ok)
		}
	}
	if _, ok := StageAggregator.Service(); ok {
		t.Error("the aggregator is a service")
	}
	if Primary.Other() != Standby || Standby.Other() != Primary {
		t.Error("Other")
	}
	for name, parse := range map[string]func(string) error{
		"side":    func(s string) error { _, err := ParseSide(s); return err },
		"service": func(s string) error { _, err := ParseService(s); return err },
		"stage":   func(s string) error { _, err := ParseStage(s); return err },
		"role":    func(s string) error { _, err := ParseRole(s); return err },
	} {
		if parse("") == nil || parse("Primary") == nil {
			t.Errorf("%s: parsed what is no name", name)
		}
	}
	if Services()[NumServices-1] != ServiceBidder || len(StageNames()) != 4 || SideNames()[0] != "primary" {
		t.Error("lists")
	}
}
