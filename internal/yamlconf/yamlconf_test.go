package yamlconf

import (
	"strings"
	"testing"
	"time"
)

type cfg struct {
	Side   string `yaml:"side"`
	Nested struct {
		Window time.Duration `yaml:"window"`
		Count  int           `yaml:"count"`
	} `yaml:"nested"`
}

func TestDecodeNamesTheKey(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown key", "side: primary\nnested:\n  windwo: 10s\n", "key nested.windwo (line 3): unknown key"},
		{"bad duration", "nested:\n  window: 10x\n", `key nested.window (line 2): "10x" is not a duration (write e.g. 500ms, 10s, 2m)`},
		{"duration without a unit", "side: a\nnested:\n  window: 120\n", `key nested.window (line 3): "120" is not a duration (write e.g. 500ms, 10s, 2m)`},
		{"wrong type", "nested:\n  count: many\n", "key nested.count (line 2): cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c cfg
			err := Decode([]byte(tc.in), &c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want it to contain %q", err, tc.want)
			}
		})
	}
	var c cfg
	if err := Decode([]byte("side: standby\nnested:\n  window: 2m\n  count: 3\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Side != "standby" || c.Nested.Window != 2*time.Minute || c.Nested.Count != 3 {
		t.Fatalf("decoded %+v", c)
	}
	if err := Decode(nil, &c); err != nil {
		t.Fatalf("empty config: %v", err)
	}
}
