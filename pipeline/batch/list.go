package batch

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/transforms/codes"
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

// CodeDuplicate (BAT-DUPLICATE): a list line names a repository (and
// branch) an earlier line already names, spelled differently or not; it is
// left out.
const CodeDuplicate = "BAT-DUPLICATE"

func init() {
	codes.Register("batch", "batch list",
		codes.Code{Code: CodeDuplicate, Name: "duplicate-entry", Severity: codes.Warning,
			Title: "A batch list names one repository twice",
			Doc: "Two lines of a batch list name the same repository and branch: the same directory reached " +
				"through another relative path or a symlink, or one git URL written two ways (host case, a " +
				"default port, user name, protocol, trailing `/` or `.git`). The first line runs; the later one is " +
				"reported, naming both lines, and left out, so the repository is migrated and delivered once."},
	)
}

// Problem is a list line left out, and why.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Code, p.Message)
}

// ParseList reads a batch list: one repository per line, a git URL or a
// path, optionally followed by key=value options (branch, target, push, pr,
// timeout). Blank lines and # comments are ignored. Errors name the line.
// A line naming a repository and branch an earlier line names (SameRepo)
// is left out with a Problem.
func ParseList(r io.Reader, name string) ([]Entry, []Problem, error) {
	var out []Entry
	var probs []Problem
	type first struct {
		line   int
		source string
	}
	seen := map[string]first{}
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
			return nil, nil, fmt.Errorf("%s:%d: credentials in a URL; use GITHUB_TOKEN or the config's github.token_env", name, n)
		}
		e := Entry{Line: n, Source: src}
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "" {
				return nil, nil, fmt.Errorf("%s:%d: %q is not key=value", name, n, kv)
			}
			switch k {
			case "branch":
				e.Branch = v
			case "target":
				if _, err := rule.ParseTarget(v); err != nil {
					return nil, nil, fmt.Errorf("%s:%d: %w", name, n, err)
				}
				e.Target = v
			case "push", "pr":
				b, err := strconv.ParseBool(v)
				if err != nil {
					return nil, nil, fmt.Errorf("%s:%d: %s=%q: want true or false", name, n, k, v)
				}
				if k == "push" {
					e.Push = &b
				} else {
					e.PR = &b
				}
			case "timeout":
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return nil, nil, fmt.Errorf("%s:%d: timeout=%q: want a positive duration like 10m", name, n, v)
				}
				e.Timeout = d
			default:
				return nil, nil, fmt.Errorf("%s:%d: unknown option %q (want branch, target, push, pr or timeout)", name, n, k)
			}
		}
		repo := RepoKey(e.Source)
		key := repo + "@" + e.Branch
		if prev, dup := seen[key]; dup {
			_, where, _ := strings.Cut(repo, ":")
			probs = append(probs, Problem{File: name, Line: n, Code: CodeDuplicate,
				Message: fmt.Sprintf("%q names the same repository as %q on line %d (%s): left out", e.Source, prev.source, prev.line, where)})
			continue
		}
		seen[key] = first{n, e.Source}
		e.ID = uniqueID(slug(e.Source, e.Branch), ids)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no repositories listed", name)
	}
	return out, probs, nil
}

// defaultPorts are the ports a URL may leave out.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22", "git": "9418"}

// RepoKey is what names one repository however it is written: a local
// path (relative to the working directory) absolute with its symlinks
// resolved; a network git URL as its lower-case host (without user, default
// port or protocol: https://, ssh:// and git@host: name one repository) and
// its path without repeated or trailing `/` and `.git`; a file:// URL as the
// local path it names.
func RepoKey(src string) string {
	if !acquire.IsRemote(src) {
		return "path:" + canonicalPath(src)
	}
	host, p := "", ""
	if i := strings.Index(src, "://"); i < 0 { // scp-like user@host:path
		at := strings.Index(src, "@")
		colon := strings.Index(src, ":")
		host, p = src[at+1:colon], "/"+src[colon+1:]
	} else {
		u, err := url.Parse(src)
		if err != nil {
			return "url:" + src
		}
		if u.Scheme == "file" {
			return "path:" + canonicalPath(u.Path)
		}
		host, p = u.Hostname(), u.EscapedPath()
		if port := u.Port(); port != "" && port != defaultPorts[u.Scheme] {
			host += ":" + port
		}
	}
	p = path.Clean("/" + p)
	for {
		trimmed := strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".git")
		if trimmed == p {
			break
		}
		p = trimmed
	}
	return "git:" + strings.ToLower(host) + p
}

// canonicalPath is p absolute, cleaned, with its symlinks resolved when it
// exists.
func canonicalPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
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
