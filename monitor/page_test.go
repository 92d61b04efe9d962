package monitor

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotpair/hotpair/contract"
	"github.com/hotpair/hotpair/monitor/decisions"
)

// chromium returns the headless browser the page test needs. It fails (does
// not skip) when it is missing: scripts/test.sh installs it.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Fatal("chromium is not installed: the on-call page test needs it (run scripts/install-deps.sh, or: sudo apt-get install -y chromium)")
	return ""
}

// renderPage loads url in headless Chromium and returns the rendered DOM
// and a 1280x900 screenshot.
func renderPage(t testing.TB, url string) (string, image.Image) {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	shot := filepath.Join(dir, "page.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--dump-dom",
		"--window-size=1280,900", url)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, errb.String())
	}
	defer f.Close()
	if keep := os.Getenv("HOTPAIR_KEEP_SCREENSHOT"); keep != "" {
		if b, err := os.ReadFile(shot); err == nil {
			_ = os.WriteFile(keep, b, 0o644)
		}
	}
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return out.String(), img
}

// pixelStats counts the screenshot's non-white pixels and the pixels of
// each side's colour.
func pixelStats(img image.Image) (nonWhite, primary, standby int) {
	near := func(r, g, b uint32, hex string) bool {
		var want [3]uint32
		for i := range 3 {
			var v uint32
			for _, c := range hex[1+2*i : 3+2*i] {
				v = v*16 + uint32(strings.IndexRune("0123456789abcdef", c))
			}
			want[i] = v
		}
		d := func(a, b uint32) uint32 {
			if a > b {
				return a - b
			}
			return b - a
		}
		return d(r>>8, want[0])+d(g>>8, want[1])+d(b>>8, want[2]) < 40
	}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 < 245 || g>>8 < 245 || b>>8 < 245 {
				nonWhite++
			}
			if near(r, g, b, colorPrimary) {
				primary++
			}
			if near(r, g, b, colorStandby) {
				standby++
			}
		}
	}
	return
}

// checkOnCallPage serves the replica's page and checks, in a real browser,
// that budget shows the active side and the reason, that the switch is
// listed, and that the charts were drawn in both sides' colours.
func checkOnCallPage(t *testing.T, r *replica, active, reason string) {
	t.Helper()
	// The page lists switches from the decision record: wait until the
	// replica read this one back.
	waitFor(t, &r.changes, 10*time.Second, "the switch to be read back from the decision record", func() bool {
		for _, sw := range r.hist.recentSwitches() {
			if sw.Service == contract.ServiceBudget && sw.To.String() == active {
				return true
			}
		}
		return false
	})
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	dom, img := renderPage(t, srv.URL+"/")

	start := strings.Index(dom, `id="svc-budget"`)
	if start < 0 {
		t.Fatalf("rendered page has no budget section:\n%s", dom)
	}
	section := dom[start:]
	if end := strings.Index(section[1:], `class="svc"`); end > 0 {
		section = section[:end]
	}
	badge := regexp.MustCompile(`class="badge active-side" data-side="([a-z]*)"[^>]*>([A-Z]+)<`).FindStringSubmatch(section)
	if badge == nil || badge[1] != active || badge[2] != strings.ToUpper(active) {
		t.Fatalf("budget's active-side badge = %v, want %s", badge, active)
	}
	why := regexp.MustCompile(`<span class="reason">([^<]*)</span>`).FindStringSubmatch(section)
	if why == nil || !strings.Contains(why[1], reason) {
		t.Fatalf("budget's reason = %v, want it to mention %q", why, reason)
	}
	if n := strings.Count(section, "<polyline"); n != 6 {
		t.Fatalf("budget has %d chart lines, want 6 (QPS, end-to-end lag and the aggregator's lag, both sides)", n)
	}
	if !strings.Contains(section, "end to end") || !strings.Contains(section, "aggregator behind") ||
		!regexp.MustCompile(`id="lag-definition"[^>]*>p99 lag is end to end: .*receive time − \(window end \+ the aggregator's allowed lateness\)`).MatchString(dom) {
		t.Fatalf("the page does not say what the lag measures:\n%s", dom)
	}
	if !regexp.MustCompile(`(?s)<tr class="switch">.*?budget.*?` + active).MatchString(dom) {
		t.Fatalf("the switches table does not list budget's switch to %s", active)
	}
	nonWhite, primary, standby := pixelStats(img)
	total := img.Bounds().Dx() * img.Bounds().Dy()
	t.Logf("screenshot %dx%d: %d non-white, %d primary-blue, %d standby-orange pixels",
		img.Bounds().Dx(), img.Bounds().Dy(), nonWhite, primary, standby)
	if nonWhite < total/50 {
		t.Fatalf("screenshot is (nearly) blank: %d of %d pixels are not white", nonWhite, total)
	}
	if primary < 300 || standby < 300 {
		t.Fatalf("screenshot lacks the side colours (charts and badges): %d primary, %d standby pixels", primary, standby)
	}
}

// The page must not pull anything from the network: no scripts, no links
// to other hosts.
func TestOnCallPageIsSelfContained(t *testing.T) {
	p, s := cluster{side: contract.Primary, brokers: []string{"127.0.0.1:1"}}, cluster{side: contract.Standby, brokers: []string{"127.0.0.1:2"}}
	m, err := New(Options{Config: testConfig("page", "127.0.0.1:3", testRoot(t), p, s)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sel := contract.Selection{V: 1, Service: contract.ServiceBudget, Active: contract.Primary, Preferred: contract.Primary, Epoch: 1, DecidedAt: now, Reason: "<script>x</script>"}
	m.hist.add(decisions.WindowEntry(sel, now.Add(-time.Minute), now, map[contract.Side]decisions.Verdict{contract.Primary: {Healthy: true, QPS: 10}}, decisions.Thresholds{}))
	for _, e := range decisions.Changes(nil, sel, "") {
		m.hist.add(e)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `id="svc-budget"`) || !strings.Contains(body, `<tr class="switch">`) {
		t.Fatalf("GET / = %d\n%s", rec.Code, body)
	}
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import"} {
		if i := strings.Index(body, bad); i >= 0 && !strings.HasPrefix(body[i:], "http://www.w3.org/2000/svg") {
			t.Fatalf("page contains %q: %s", bad, body[max(0, i-80):min(len(body), i+80)])
		}
	}
}
