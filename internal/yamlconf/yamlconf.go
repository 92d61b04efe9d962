// Package yamlconf decodes daemon configs strictly: unknown keys are errors,
// and every error names the key it is about, with its line.
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
	"time"

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
		// A field's own UnmarshalYAML (Duration) reports "line N: ...".
		return errors.New(nameKey(err.Error(), keys))
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, m := range te.Errors {
		msgs = append(msgs, nameKey(m, keys))
	}
	return errors.New(strings.Join(msgs, "; "))
}

var lineRe = regexp.MustCompile(`^line (\d+): (.*)$`)

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

// Duration is a time.Duration written as "10s", "2m", "1h30m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (write e.g. 500ms, 10s, 2m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
