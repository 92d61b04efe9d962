package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hotpair/hotpair/sandbox"
)

func runFault(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 || (args[0] != "inject" && args[0] != "heal" && args[0] != "list") {
		fmt.Fprintln(a.stderr, "usage: hotpair fault inject|heal|list --http ADDR ...")
		fmt.Fprintln(a.stderr, "  hotpair fault inject --http ADDR KIND [--service S] [--side SIDE] [--for D] [--period D] [--lag D] [--build B] [--rate N] [--factor F]")
		fmt.Fprintln(a.stderr, "  hotpair fault heal --http ADDR (ID | --all)")
		fmt.Fprintln(a.stderr, "  hotpair fault list --http ADDR")
		fmt.Fprintln(a.stderr, "kinds: "+strings.Join(sandbox.FaultKinds(), ", "))
		return 2
	}
	switch args[0] {
	case "inject":
		return faultInject(ctx, a, args[1:])
	case "heal":
		return faultHeal(ctx, a, args[1:])
	}
	return faultList(ctx, a, args[1:])
}

func faultInject(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "fault inject", "fault inject --http ADDR KIND [--service S] [--side SIDE] [--for D] [--period D] [--lag D] [--build B] [--rate N] [--factor F]\n\nkinds: "+strings.Join(sandbox.FaultKinds(), ", "))
	addr := fs.String("http", "", "the sandbox's HTTP address (host:port)")
	var spec sandbox.FaultSpec
	fs.StringVar(&spec.Service, "service", "", "stage: aggregator, budget, pacer or bidder (stall, flap, kill-instance, slow)")
	fs.StringVar(&spec.Side, "side", "", "side: primary or standby")
	dur := fs.Duration("for", 0, "heal by itself after this long (default: until healed)")
	period := fs.Duration("period", 0, "flap: stalled and healthy for this long each (default: the monitor window)")
	lag := fs.Duration("lag", 0, "lag: how late the side's records arrive")
	fs.StringVar(&spec.Build, "build", "", "deploy: the build label the side's pipelines restart on")
	fs.Float64Var(&spec.Rate, "rate", 0, "slow: the most input records per second the stage processes")
	fs.Float64Var(&spec.Factor, "factor", 0, "traffic: how many times the usual ad requests the load generator sends (4: a surge, 0.25: a drop)")
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if *addr == "" || len(pos) != 1 {
		return usageError(fs, a.stderr, "need --http and exactly one KIND")
	}
	spec.Kind = pos[0]
	for _, d := range []struct {
		v   time.Duration
		dst *string
	}{{*dur, &spec.For}, {*period, &spec.Period}, {*lag, &spec.Lag}} {
		if d.v < 0 {
			return usageError(fs, a.stderr, "durations must be positive")
		}
		if d.v > 0 {
			*d.dst = d.v.String()
		}
	}
	body, _ := json.Marshal(spec)
	var f sandbox.Fault
	status, err := callSandbox(ctx, http.MethodPost, *addr, "/api/v1/faults", body, &f)
	switch {
	case err != nil:
		fmt.Fprintln(a.stderr, "hotpair fault inject:", err)
		if status == http.StatusBadRequest {
			return 2
		}
		return 1
	}
	fmt.Fprintln(a.stdout, f.ID)
	if f.Detail != "" {
		fmt.Fprintln(a.stderr, f.Detail)
	}
	return 0
}

func faultHeal(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "fault heal", "fault heal --http ADDR (ID | --all)")
	addr := fs.String("http", "", "the sandbox's HTTP address (host:port)")
	all := fs.Bool("all", false, "heal every fault in force")
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if *addr == "" || (*all == (len(pos) == 1)) || len(pos) > 1 {
		return usageError(fs, a.stderr, "need --http and either one fault ID or --all")
	}
	path := "/api/v1/faults"
	if !*all {
		path += "/" + pos[0]
	}
	var healed []sandbox.Fault
	var one sandbox.Fault
	out := any(&one)
	if *all {
		out = &healed
	}
	if _, err := callSandbox(ctx, http.MethodDelete, *addr, path, nil, out); err != nil {
		fmt.Fprintln(a.stderr, "hotpair fault heal:", err)
		return 1
	}
	if !*all {
		healed = append(healed, one)
	}
	for _, f := range healed {
		fmt.Fprintf(a.stdout, "%s %s healed\n", f.ID, f.Kind)
	}
	return 0
}

func faultList(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "fault list", "fault list --http ADDR")
	addr := fs.String("http", "", "the sandbox's HTTP address (host:port)")
	pos, code, done := parseInterleaved(fs, args)
	if done {
		return code
	}
	if *addr == "" || len(pos) > 0 {
		return usageError(fs, a.stderr, "need --http and no arguments")
	}
	var fl []sandbox.Fault
	if _, err := callSandbox(ctx, http.MethodGet, *addr, "/api/v1/faults", nil, &fl); err != nil {
		fmt.Fprintln(a.stderr, "hotpair fault list:", err)
		return 1
	}
	for _, f := range fl {
		state := "active"
		if !f.Active() {
			state = "healed " + f.Healed.Format(time.TimeOnly)
		}
		where := strings.Trim(f.Service+"/"+f.Side, "/")
		fmt.Fprintf(a.stdout, "%-4s %-20s %-18s started %s  %s\n", f.ID, f.Kind, where, f.Started.Format(time.TimeOnly), state)
	}
	return 0
}

// callSandbox calls the sandbox's fault API and decodes the JSON answer.
func callSandbox(ctx context.Context, method, addr, path string, body []byte, out any) (int, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading the sandbox's answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return resp.StatusCode, fmt.Errorf("%s", e.Error)
		}
		return resp.StatusCode, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	if err := json.Unmarshal(b, out); err != nil {
		b = bytes.TrimSpace(b)
		if len(b) > 200 {
			b = append(b[:200:200], "…"...)
		}
		return resp.StatusCode, fmt.Errorf("the sandbox's answer to %s %s is not what was expected (%w): %s", method, path, err, b)
	}
	return resp.StatusCode, nil
}
