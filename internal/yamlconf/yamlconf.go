// Package yamlconf is the one decoder of hotpair's YAML configs (pipeline,
// monitor, replay verify). It decodes strictly: an unknown key is an error,
// and every error names the key it is about, its line and the fix.
//
// Durations are time.Duration fields written as Go durations ("500ms",
// "10s", "2m", "1h30m"); a bare number is an error, never nanoseconds.
package yamlconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads path and decodes it into out (see Decode).
func Load(path string, out any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := Decode(b, out); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// Decode decodes YAML into out, rejecting unknown keys. Errors name the key
// path (e.g. "aggregator.window") and line of each problem.
func Decode(b []byte, out any) error {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return err
	}
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	err := d.Decode(out)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	keys := keyLines(&root)
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		// A field's own UnmarshalYAML reports "line N: ...".
		return errors.New(nameKey(err.Error(), keys))
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, m := range te.Errors {
		msgs = append(msgs, nameKey(m, keys))
	}
	return errors.New(strings.Join(msgs, "; "))
}

var (
	lineRe     = regexp.MustCompile(`^line (\d+): (.*)$`)
	durationRe = regexp.MustCompile("^cannot unmarshal !!\\w+ `(.*)` into time.Duration$")
)

// nameKey rewrites "line N: msg" as "key a.b (line N): msg".
func nameKey(msg string, keys map[int]string) string {
	m := lineRe.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	n, _ := strconv.Atoi(m[1])
	k, ok := keys[n]
	if !ok {
		return msg
	}
	text := m[2]
	if strings.HasPrefix(text, "field ") && strings.Contains(text, " not found in type ") {
		text = "unknown key (check its spelling and indentation)"
	}
	if d := durationRe.FindStringSubmatch(text); d != nil {
		text = fmt.Sprintf("%q is not a duration (write e.g. 500ms, 10s, 2m)", d[1])
	}
	return fmt.Sprintf("key %s (line %d): %s", k, n, text)
}

// keyLines maps each line that holds a key or a value to its key path.
func keyLines(n *yaml.Node) map[int]string {
	out := make(map[int]string)
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				out[k.Line] = p
				if _, taken := out[v.Line]; !taken || v.Line != k.Line {
					out[v.Line] = p
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				out[c.Line] = p
				walk(c, p)
			}
		}
	}
	walk(n, "")
	return out
}
