package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// PyprojectName is the Python project file whose [tool.pallasify] table
// configures pallasify with the same keys as pallasify.yaml.
const PyprojectName = "pyproject.toml"

// PyprojectTable is the table of pyproject.toml that pallasify reads.
const PyprojectTable = "tool.pallasify"

// Pyproject turns the [tool.pallasify] table of a pyproject.toml into a
// Source that Parse and Merge check exactly as they check pallasify.yaml
// (same keys, same validation, the same trust rule), with every problem's
// line a line of the TOML file. ok is false when the file has no such
// table; a file that is not valid TOML is an *Error with its line.
func Pyproject(name string, data []byte, trusted bool) (src Source, ok bool, err error) {
	if !bytes.Contains(data, []byte("pallasify")) {
		return Source{}, false, nil // cheap: no table can be there
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		p := Problem{File: name, Message: err.Error()}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			p.Line, _ = de.Position()
		}
		return Source{}, false, &Error{Problems: []Problem{p}}
	}
	tool, _ := doc["tool"].(map[string]any)
	raw, present := tool["pallasify"]
	if !present {
		return Source{}, false, nil
	}
	lines := keyLines(data)
	table, isTable := raw.(map[string]any)
	if !isTable {
		return Source{}, false, &Error{Problems: []Problem{{File: name, Line: lines[joinKey([]string{"tool", "pallasify"})],
			Key: PyprojectTable, Message: "must be a table"}}}
	}
	e := &yamlEmitter{lines: lines, fileLine: map[int]int{}}
	e.mapping(table, []string{"tool", "pallasify"}, 0)
	if e.b.Len() == 0 {
		e.b.WriteString("{}\n")
	}
	return Source{Name: name, Data: e.b.Bytes(), Trusted: trusted, lineMap: e.fileLine}, true, nil
}

// keySep joins key parts in keyLines' map (no TOML key part holds it).
const keySep = "\x00"

func joinKey(parts []string) string { return strings.Join(parts, keySep) }

// keyLines maps every key path of a (valid) TOML document to the line
// where it is defined: a key's own line, a table header's line.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	set := func(path []string, line int) {
		for i := 1; i <= len(path); i++ {
			k := joinKey(path[:i])
			if _, seen := out[k]; !seen {
				out[k] = line
			}
		}
	}
	var keyValue func(prefix []string, n *unstable.Node)
	keyValue = func(prefix []string, n *unstable.Node) {
		path := append([]string(nil), prefix...)
		line := 0
		for it := n.Key(); it.Next(); {
			k := it.Node()
			path = append(path, string(k.Data))
			if line == 0 {
				line = p.Shape(k.Raw).Start.Line
			}
		}
		set(path, line)
		if v := n.Value(); v.Kind == unstable.InlineTable {
			for it := v.Children(); it.Next(); {
				keyValue(path, it.Node())
			}
		}
	}
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = table[:0]
			line := 0
			for it := n.Key(); it.Next(); {
				k := it.Node()
				table = append(table, string(k.Data))
				if line == 0 {
					line = p.Shape(k.Raw).Start.Line
				}
			}
			set(table, line)
		case unstable.KeyValue:
			keyValue(table, n)
		}
	}
	return out
}

// yamlEmitter writes a TOML table as YAML, one key per line, recording the
// TOML line of each YAML line it writes.
type yamlEmitter struct {
	b        bytes.Buffer
	line     int // lines written
	lines    map[string]int
	fileLine map[int]int // YAML line -> TOML line
}

func (e *yamlEmitter) mapping(m map[string]any, path []string, depth int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	at := func(k string) int { return e.lines[joinKey(append(path[:len(path):len(path)], k))] }
	sort.Slice(keys, func(i, j int) bool {
		if li, lj := at(keys[i]), at(keys[j]); li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		e.line++
		e.fileLine[e.line] = at(k)
		e.b.WriteString(strings.Repeat("  ", depth))
		e.b.WriteString(quote(k))
		e.b.WriteString(":")
		if sub, ok := m[k].(map[string]any); ok && len(sub) > 0 {
			e.b.WriteString("\n")
			e.mapping(sub, append(path[:len(path):len(path)], k), depth+1)
			continue
		}
		e.b.WriteString(" ")
		e.b.WriteString(flow(m[k]))
		e.b.WriteString("\n")
	}
}

// flow is a TOML value as a one-line YAML value.
func flow(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		switch {
		case math.IsNaN(v):
			return ".nan"
		case math.IsInf(v, 1):
			return ".inf"
		case math.IsInf(v, -1):
			return "-.inf"
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0" // a float stays a float
		}
		return s
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = flow(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = quote(k) + ": " + flow(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case fmt.Stringer: // dates and times: strings to the config
		return quote(v.String())
	}
	return quote(fmt.Sprint(v))
}

// quote is s as a YAML double-quoted scalar (JSON's escapes are YAML's).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// Find returns the config file of the directory dir: its pallasify.yaml
// when there is one, else its pyproject.toml when that has a
// [tool.pallasify] table (or mentions pallasify and is not valid TOML, so
// that loading it reports the error); "" when neither.
func Find(dir string) (string, error) {
	p := filepath.Join(dir, FileName)
	switch fi, err := os.Stat(p); {
	case err == nil && !fi.IsDir():
		return p, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read %s: %w", FileName, err)
	}
	p = filepath.Join(dir, PyprojectName)
	data, err := os.ReadFile(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
			return "", nil
		}
		return "", fmt.Errorf("read %s: %w", PyprojectName, err)
	}
	_, ok, err := Pyproject(p, data, false)
	if ok || err != nil {
		return p, nil
	}
	return "", nil
}

// Discover finds the config of a run over path, as ruff finds its own: in
// path (its directory, for a file) and then in each parent, the first
// directory where Find finds a file (pallasify.yaml wins over
// pyproject.toml in one directory). The search stops after the first
// directory that holds .git (the repository's root) and at the filesystem
// root. It returns the file's absolute path, "" when there is none.
func Discover(path string) (string, error) {
	dir, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		dir = filepath.Dir(dir)
	}
	for {
		found, err := Find(dir)
		if err != nil || found != "" {
			return found, err
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return "", nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// ReadFile reads one config file as a Source: a pyproject.toml (by name)
// gives its [tool.pallasify] table, anything else is YAML. name is shown
// in messages.
func ReadFile(path, name string, trusted bool) (Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Source{}, err
	}
	if filepath.Base(path) == PyprojectName {
		src, ok, err := Pyproject(name, data, trusted)
		if err != nil {
			return Source{}, err
		}
		if !ok {
			return Source{}, &Error{Problems: []Problem{{File: name, Message: "no [" + PyprojectTable + "] table"}}}
		}
		return src, nil
	}
	return Source{Name: name, Data: data, Trusted: trusted}, nil
}

// Describe names a config file for a report: "pallasify.yaml", or
// "pyproject.toml [tool.pallasify]", with the path as given.
func Describe(path string) string {
	if filepath.Base(path) == PyprojectName {
		return path + " [" + PyprojectTable + "]"
	}
	return path
}
