package yamlconf

import (
	"strings"
	"testing"
)

type cfg struct {
	Side   string `yaml:"side"`
	Nested struct {
		Window Duration `yaml:"window"`
		Count  int      `yaml:"count"`
	} `yaml:"nested"`
}

func TestDecodeNamesTheKey(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown key", "side: primary\nnested:\n  windwo: 10s\n", "key nested.windwo (line 3): unknown key"},
		{"bad duration", "nested:\n  window: 10x\n", `key nested.window (line 2): "10x" is not a duration`},
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
	if c.Side != "standby" || c.Nested.Window.D().Minutes() != 2 || c.Nested.Count != 3 {
		t.Fatalf("decoded %+v", c)
	}
	if err := Decode(nil, &c); err != nil {
		t.Fatalf("empty config: %v", err)
	}
}
