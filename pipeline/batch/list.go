package batch

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/transforms/rule"
)

// Entry is one repository of a batch list.
type Entry struct {
	Line    int           `json:"line"`
	ID      string        `json:"id"`     // directory name under the run dir
	Source  string        `json:"source"` // URL or path, without credentials
	Branch  string        `json:"branch,omitempty"`
	Target  string        `json:"target,omitempty"`
	Push    *bool         `json:"push,omitempty"`
	PR      *bool         `json:"pr,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// ParseList reads a batch list: one repository per line, a git URL or a
// path, optionally followed by key=value options (branch, target, push, pr,
// timeout). Blank lines and # comments are ignored. Errors name the line.
func ParseList(r io.Reader, name string) ([]Entry, error) {
	var out []Entry
	seen := map[string]int{}
	ids := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, " #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		src, _ := acquire.StripCredentials(fields[0])
		if src != fields[0] {
			return nil, fmt.Errorf("%s:%d: credentials in a URL; use GITHUB_TOKEN or the config's github.token_env", name, n)
		}
		e := Entry{Line: n, Source: src}
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "" {
				return nil, fmt.Errorf("%s:%d: %q is not key=value", name, n, kv)
			}
			switch k {
			case "branch":
				e.Branch = v
			case "target":
				if _, err := rule.ParseTarget(v); err != nil {
					return nil, fmt.Errorf("%s:%d: %w", name, n, err)
				}
				e.Target = v
			case "push", "pr":
				b, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %s=%q: want true or false", name, n, k, v)
				}
				if k == "push" {
					e.Push = &b
				} else {
					e.PR = &b
				}
			case "timeout":
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("%s:%d: timeout=%q: want a positive duration like 10m", name, n, v)
				}
				e.Timeout = d
			default:
				return nil, fmt.Errorf("%s:%d: unknown option %q (want branch, target, push, pr or timeout)", name, n, k)
			}
		}
		key := e.Source + "@" + e.Branch
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is already listed on line %d", name, n, e.Source, prev)
		}
		seen[key] = n
		e.ID = uniqueID(slug(e.Source, e.Branch), ids)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no repositories listed", name)
	}
	return out, nil
}

var slugRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func slug(src, branch string) string {
	s := strings.TrimSuffix(strings.TrimRight(src, "/"), ".git")
	if o, r, ok := acquire.OwnerRepo(s); ok {
		s = o + "__" + r
	}
	if branch != "" {
		s += "@" + branch
	}
	s = strings.Trim(slugRE.ReplaceAllString(s, "-"), "-.")
	if len(s) > 80 {
		s = s[len(s)-80:]
	}
	if s == "" {
		s = "repo"
	}
	return s
}

func uniqueID(s string, ids map[string]bool) string {
	id := s
	for i := 2; ids[id]; i++ {
		id = fmt.Sprintf("%s-%d", s, i)
	}
	ids[id] = true
	return id
}
