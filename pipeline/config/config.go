// Package config reads pallasify.yaml: the one file that drives local runs,
// batch runs and the GitHub bot. Decoding is strict (an unknown key is an
// error with its line number), files merge in order (the repository's file,
// then the one given by --config), and keys that would let a repository
// redirect the operator's credentials are only honoured from trusted files.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pallasify/pallasify/pipeline/bench"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/transforms/rule"
)

// FileName is the config file looked up at the root of a target repository.
const FileName = "pallasify.yaml"

// Config is the whole configuration. Zero values mean "default"; call
// Defaults for a filled-in value.
type Config struct {
	Target      string   `yaml:"target" json:"target"`
	UnsafeFixes bool     `yaml:"unsafe_fixes" json:"unsafe_fixes"`
	Mark        bool     `yaml:"mark" json:"mark"`
	Select      []string `yaml:"select" json:"select,omitempty"`
	Ignore      []string `yaml:"ignore" json:"ignore,omitempty"`
	Include     []string `yaml:"include" json:"include,omitempty"`
	Exclude     []string `yaml:"exclude" json:"exclude,omitempty"`

	Branch BranchConfig `yaml:"branch" json:"branch"`
	Commit CommitConfig `yaml:"commit" json:"commit"`
	PR     PRConfig     `yaml:"pr" json:"pr"`
	LLM    LLMConfig    `yaml:"llm" json:"llm"`
	GitHub GitHubConfig `yaml:"github" json:"github"`
	Batch  BatchConfig  `yaml:"batch" json:"batch"`
	Bot    BotConfig    `yaml:"bot" json:"bot"`
	Bench  BenchConfig  `yaml:"bench" json:"bench"`
}

// BenchConfig asks migrate for the benchmark script (pipeline/bench):
// `bench: true`, or a mapping naming what the script benchmarks (a mapping
// turns it on unless it says `enabled: false`):
//
//	bench:
//	  model: "package.module:factory"  # a factory function or a model class
//	  step: train                      # or infer
//	  input_shape: [3, 224, 224]       # one item's shape
//	  dir: tools                       # where the script goes (default: the root)
type BenchConfig struct {
	Enabled bool   `json:"enabled"`
	Dir     string `json:"dir,omitempty"`
	bench.Config
}

// UnmarshalYAML reads a boolean or a mapping; keys the mapping may not hold
// are errors with their line, as everywhere else in the file.
func (b *BenchConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var on bool
		if err := n.Decode(&on); err != nil {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: bench: want true, false or a mapping (model, step, input_shape, ...)", n.Line)}}
		}
		b.Enabled = on
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: bench: want true, false or a mapping", n.Line)}}
	}
	known := map[string]bool{"enabled": true, "dir": true}
	t := reflect.TypeOf(bench.Config{})
	for i := 0; i < t.NumField(); i++ {
		known[strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]] = true
	}
	var errs []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !known[k.Value] {
			errs = append(errs, fmt.Sprintf("line %d: field %s not found in type config.BenchConfig", k.Line, k.Value))
		}
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	var m struct {
		Enabled      *bool  `yaml:"enabled"`
		Dir          string `yaml:"dir"`
		bench.Config `yaml:",inline"`
	}
	m.Dir, m.Config = b.Dir, b.Config
	if err := n.Decode(&m); err != nil {
		return err
	}
	b.Enabled = m.Enabled == nil || *m.Enabled
	b.Dir, b.Config = m.Dir, m.Config
	return nil
}

// BranchConfig names the delivery branch: <prefix>/<name>.
type BranchConfig struct {
	Prefix string `yaml:"prefix" json:"prefix"`
	Name   string `yaml:"name" json:"name"`
	Base   string `yaml:"base" json:"base,omitempty"` // empty: the repository's default branch
}

// CommitConfig is the author of pallasify's commits.
type CommitConfig struct {
	AuthorName  string `yaml:"author_name" json:"author_name"`
	AuthorEmail string `yaml:"author_email" json:"author_email"`
}

// PRConfig shapes pull requests.
type PRConfig struct {
	Title        string   `yaml:"title" json:"title"`
	Draft        *bool    `yaml:"draft" json:"draft"`
	Labels       []string `yaml:"labels" json:"labels"`
	MaxBodyChars int      `yaml:"max_body_chars" json:"max_body_chars"`
	// MaxNewPerRun caps the pull requests one batch run may open (0: no cap).
	MaxNewPerRun int `yaml:"max_new_per_run" json:"max_new_per_run"`
	// Fork: auto (fork when the token cannot push), always, never.
	Fork string `yaml:"fork" json:"fork"`
}

// IsDraft reports whether new PRs are drafts (default true).
func (p PRConfig) IsDraft() bool { return p.Draft == nil || *p.Draft }

// LLMConfig is the OpenAI-compatible endpoint used to draft kernels (the
// LLM drafter's own settings type).
type LLMConfig = llm.Config

// GitHubConfig is how pallasify authenticates to GitHub. Operator-only.
type GitHubConfig struct {
	APIURL           string `yaml:"api_url" json:"api_url,omitempty"`
	TokenEnv         string `yaml:"token_env" json:"token_env,omitempty"`
	AppID            int64  `yaml:"app_id" json:"app_id,omitempty"`
	InstallationID   int64  `yaml:"installation_id" json:"installation_id,omitempty"`
	PrivateKeyFile   string `yaml:"private_key_file" json:"private_key_file,omitempty"`
	PrivateKeyEnv    string `yaml:"private_key_env" json:"private_key_env,omitempty"`
	WebhookSecretEnv string `yaml:"webhook_secret_env" json:"webhook_secret_env,omitempty"`
	// Hosts are further git hosts (host or host:port) the token may be sent
	// to over HTTPS, besides the GitHub host of APIURL.
	Hosts []string `yaml:"hosts" json:"hosts,omitempty"`
}

// TokenHosts are the hosts a GitHub token may be sent to (always over
// HTTPS): the web host of the API URL (github.com for api.github.com, HOST
// for https://HOST/api/v3/) and the configured extra hosts, lower-cased.
func (g GitHubConfig) TokenHosts() []string {
	var out []string
	if h := GitHubHost(g.APIURL); h != "" {
		out = append(out, h)
	}
	for _, h := range g.Hosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// GitHubHost is the git host of a GitHub REST API base URL: github.com for
// https://api.github.com/ (and for ""), HOST for GitHub Enterprise's
// https://HOST/api/v3/.
func GitHubHost(apiURL string) string {
	if apiURL == "" {
		return "github.com"
	}
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return ""
	}
	h := strings.ToLower(u.Host)
	if h == "api.github.com" {
		return "github.com"
	}
	return h
}

// BatchConfig tunes batch runs. Operator-only.
type BatchConfig struct {
	Concurrency      int           `yaml:"concurrency" json:"concurrency,omitempty"`
	CloneConcurrency int           `yaml:"clone_concurrency" json:"clone_concurrency,omitempty"`
	Timeout          time.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// BotConfig tunes the webhook server. Operator-only.
type BotConfig struct {
	Addr       string        `yaml:"addr" json:"addr,omitempty"`
	Workers    int           `yaml:"workers" json:"workers,omitempty"`
	Queue      int           `yaml:"queue" json:"queue,omitempty"`
	JobTimeout time.Duration `yaml:"job_timeout" json:"job_timeout,omitempty"`
}

// Defaults returns the configuration used when no file says otherwise.
func Defaults() *Config {
	return &Config{
		Target: string(rule.Portable),
		Branch: BranchConfig{Prefix: "pallasify", Name: "tpu-migration"},
		Commit: CommitConfig{AuthorName: "pallasify", AuthorEmail: "pallasify@users.noreply.github.com"},
		PR: PRConfig{
			Title:        "Migrate CUDA code to TPU (pallasify)",
			Labels:       []string{"pallasify"},
			MaxBodyChars: MaxPRBody,
			Fork:         "auto",
		},
		LLM:    LLMConfig{APIKeyEnv: "OPENAI_API_KEY", MaxRounds: 4, Timeout: 2 * time.Minute},
		GitHub: GitHubConfig{APIURL: "https://api.github.com/", TokenEnv: "GITHUB_TOKEN", WebhookSecretEnv: "PALLASIFY_WEBHOOK_SECRET"},
		Batch:  BatchConfig{Concurrency: 4, CloneConcurrency: 2, Timeout: 30 * time.Minute},
		Bot:    BotConfig{Addr: ":8080", Workers: 2, Queue: 64, JobTimeout: 20 * time.Minute},
	}
}

// MaxPRBody is the largest PR body pallasify writes: GitHub rejects bodies
// over 65536 characters, so keep a margin.
const MaxPRBody = 65000

// Problem is one finding about a config file.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
	Warning bool   `json:"warning,omitempty"`
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	kind := "error"
	if p.Warning {
		kind = "warning"
	}
	if p.Key != "" {
		return fmt.Sprintf("%s: %s: %s: %s", loc, kind, p.Key, p.Message)
	}
	return fmt.Sprintf("%s: %s: %s", loc, kind, p.Message)
}

// Error is returned when a config file has errors (warnings alone are not errors).
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	var b strings.Builder
	n := 0
	for _, p := range e.Problems {
		if p.Warning {
			continue
		}
		if n > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.String())
		n++
	}
	return b.String()
}

// Source is one config file to merge.
type Source struct {
	Name string // shown in messages
	Data []byte
	// Trusted files may set operator-only keys (github, batch, bot, and the
	// LLM endpoint and key variable). A repository's own pallasify.yaml is
	// not trusted when pallasify runs as a bot or over someone else's repo.
	Trusted bool
	// lineMap maps a line of Data to the line of the file it was made from
	// (Pyproject: Data is YAML made from a TOML table); nil: the same.
	lineMap map[int]int
}

// fileLines rewrites the lines of the problems about src to its file's.
func (src Source) fileLines(probs []Problem) []Problem {
	if src.lineMap == nil {
		return probs
	}
	for i := range probs {
		if probs[i].File == src.Name && probs[i].Line > 0 {
			probs[i].Line = src.lineMap[probs[i].Line]
		}
	}
	return probs
}

// operatorOnly are keys an untrusted file may not set: they would let a
// repository send the operator's credentials to a server of its choosing.
var operatorOnly = []string{"github", "batch", "bot", "llm.base_url", "llm.api_key_env"}

// Parse decodes and checks one file. It returns the problems found (errors
// and warnings); the returned error is non-nil when any problem is an error.
func Parse(src Source) (*Config, []Problem, error) {
	c := Defaults()
	probs, err := merge(c, src)
	if err != nil {
		return nil, probs, err
	}
	probs = append(probs, src.fileLines(c.check(src.Name, nodeOf(src.Data)))...)
	return c, probs, asError(probs)
}

// Merge decodes the sources in order onto the defaults: keys set by a later
// file replace earlier values (lists are replaced, not appended).
func Merge(srcs ...Source) (*Config, []Problem, error) {
	c := Defaults()
	var all []Problem
	last := Source{Name: "defaults"}
	for _, s := range srcs {
		probs, err := merge(c, s)
		all = append(all, probs...)
		if err != nil {
			return nil, all, err
		}
		last = s
	}
	all = append(all, last.fileLines(c.check(last.Name, nodeOf(last.Data)))...)
	return c, all, asError(all)
}

// Load merges the config file of repoDir (Find: <repoDir>/pallasify.yaml,
// else the [tool.pallasify] table of <repoDir>/pyproject.toml; trusted as
// given) and then the file at flagPath (if non-empty; always trusted).
func Load(repoDir string, repoTrusted bool, flagPath string) (*Config, []Problem, error) {
	repoFile := ""
	if repoDir != "" {
		p, err := Find(repoDir)
		if err != nil {
			return nil, nil, err
		}
		repoFile = p
	}
	return LoadFile(repoFile, filepath.Base(repoFile), repoTrusted, flagPath)
}

// LoadFile merges the repository's config file at repoFile (pallasify.yaml
// or pyproject.toml as ReadFile reads them, shown as name; "" for none;
// trusted as given) and then the file at flagPath (if non-empty; always
// trusted).
func LoadFile(repoFile, name string, repoTrusted bool, flagPath string) (*Config, []Problem, error) {
	var srcs []Source
	if repoFile != "" {
		src, err := ReadFile(repoFile, name, repoTrusted)
		var ce *Error
		switch {
		case errors.As(err, &ce):
			return nil, ce.Problems, err
		case err != nil:
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		srcs = append(srcs, src)
	}
	if flagPath != "" {
		data, err := os.ReadFile(flagPath)
		if err != nil {
			return nil, nil, fmt.Errorf("read config: %w", err)
		}
		srcs = append(srcs, Source{Name: flagPath, Data: data, Trusted: true})
	}
	return Merge(srcs...)
}

func asError(probs []Problem) error {
	for _, p := range probs {
		if !p.Warning {
			return &Error{Problems: probs}
		}
	}
	return nil
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// merge decodes src onto c; the problems' lines are src's file's.
func merge(c *Config, src Source) ([]Problem, error) {
	probs, err := mergeData(c, src)
	probs = src.fileLines(probs)
	if err != nil {
		return probs, &Error{Problems: probs}
	}
	return probs, nil
}

func mergeData(c *Config, src Source) ([]Problem, error) {
	root := nodeOf(src.Data)
	var probs []Problem
	if !src.Trusted && root != nil {
		for _, k := range operatorOnly {
			if n := lookup(root, k); n != nil {
				probs = append(probs, Problem{File: src.Name, Line: n.Line, Key: k, Warning: true,
					Message: "ignored: only the operator's config (--config) may set this key"})
			}
		}
		sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	}
	saved := *c
	dec := yaml.NewDecoder(bytes.NewReader(src.Data))
	dec.KnownFields(true)
	err := dec.Decode(c)
	if errors.Is(err, io.EOF) {
		return probs, nil
	}
	if err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, msg := range te.Errors {
				p := Problem{File: src.Name, Message: msg}
				if m := lineRE.FindStringSubmatch(msg); m != nil {
					fmt.Sscanf(m[1], "%d", &p.Line)
					p.Message = strings.Replace(m[2], " in type config.", " in section ", 1)
				}
				probs = append(probs, p)
			}
		} else {
			p := Problem{File: src.Name, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
			if m := lineRE.FindStringSubmatch(p.Message); m != nil {
				fmt.Sscanf(m[1], "%d", &p.Line)
				p.Message = m[2]
			}
			probs = append(probs, p)
		}
		return probs, &Error{Problems: probs}
	}
	if !src.Trusted {
		c.GitHub, c.Batch, c.Bot = saved.GitHub, saved.Batch, saved.Bot
		c.LLM.BaseURL, c.LLM.APIKeyEnv = saved.LLM.BaseURL, saved.LLM.APIKeyEnv
	}
	return probs, nil
}

func nodeOf(data []byte) *yaml.Node {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil || len(n.Content) == 0 {
		return nil
	}
	return n.Content[0]
}

// lookup finds the value node at a dotted key path.
func lookup(n *yaml.Node, path string) *yaml.Node {
	for _, k := range strings.Split(path, ".") {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

var (
	refPartRE = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)
	codeRE    = regexp.MustCompile(`^[A-Z]+[0-9]*$`)
	envRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hostRE    = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:]+\](:[0-9]+)?$`)
)

// loopbackHTTP reports whether raw is a plain-http URL on a loopback
// address (a local fake or proxy: the token never leaves the machine).
func loopbackHTTP(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return false
	}
	switch h := u.Hostname(); h {
	case "localhost", "127.0.0.1", "::1":
		return true
	default:
		return strings.HasPrefix(h, "127.")
	}
}

// check validates values; lines come from root when the key is there.
func (c *Config) check(file string, root *yaml.Node) []Problem {
	var probs []Problem
	bad := func(key, format string, args ...any) {
		p := Problem{File: file, Key: key, Message: fmt.Sprintf(format, args...)}
		if n := lookup(root, key); n != nil {
			p.Line = n.Line
		}
		probs = append(probs, p)
	}
	if _, err := rule.ParseTarget(c.Target); err != nil {
		bad("target", "%v", err)
	}
	for _, k := range []string{"select", "ignore"} {
		list := c.Select
		if k == "ignore" {
			list = c.Ignore
		}
		for _, code := range list {
			if !codeRE.MatchString(code) {
				bad(k, "%q is not a rule code or code prefix (like PDV or PDV002)", code)
			}
		}
	}
	for _, k := range []string{"include", "exclude"} {
		list := c.Include
		if k == "exclude" {
			list = c.Exclude
		}
		for _, g := range list {
			if _, err := filepath.Match(g, "x"); err != nil || g == "" {
				bad(k, "%q is not a valid glob", g)
			}
		}
	}
	if !validRefPart(c.Branch.Prefix) {
		bad("branch.prefix", "%q is not a valid git branch prefix", c.Branch.Prefix)
	}
	if !validRefPart(c.Branch.Name) {
		bad("branch.name", "%q is not a valid git branch name", c.Branch.Name)
	}
	if c.Branch.Base != "" && !validRefPart(c.Branch.Base) {
		bad("branch.base", "%q is not a valid git branch name", c.Branch.Base)
	}
	if c.Commit.AuthorName == "" || strings.ContainsAny(c.Commit.AuthorName, "<>\n") {
		bad("commit.author_name", "must be a non-empty name without <, > or newlines")
	}
	if !strings.Contains(c.Commit.AuthorEmail, "@") || strings.ContainsAny(c.Commit.AuthorEmail, "<> \n") {
		bad("commit.author_email", "%q is not an email address", c.Commit.AuthorEmail)
	}
	if strings.TrimSpace(c.PR.Title) == "" || len(c.PR.Title) > 256 {
		bad("pr.title", "must be 1 to 256 characters")
	}
	seen := map[string]bool{}
	for _, l := range c.PR.Labels {
		if strings.TrimSpace(l) == "" || len(l) > 50 {
			bad("pr.labels", "label %q must be 1 to 50 characters", l)
		}
		if seen[l] {
			bad("pr.labels", "label %q is listed twice", l)
		}
		seen[l] = true
	}
	if c.PR.MaxBodyChars < 1000 || c.PR.MaxBodyChars > 65536 {
		bad("pr.max_body_chars", "must be between 1000 and 65536 (GitHub's limit), got %d", c.PR.MaxBodyChars)
	}
	if c.PR.MaxNewPerRun < 0 {
		bad("pr.max_new_per_run", "must not be negative")
	}
	switch c.PR.Fork {
	case "auto", "always", "never":
	default:
		bad("pr.fork", "%q: want auto, always or never", c.PR.Fork)
	}
	if c.LLM.MaxRounds < 0 || c.LLM.MaxRounds > 20 {
		bad("llm.max_rounds", "must be between 0 and 20")
	}
	if c.LLM.Timeout < 0 {
		bad("llm.timeout", "must not be negative")
	}
	if c.LLM.MaxTokens < 0 || c.LLM.Concurrency < 0 {
		bad("llm", "max_tokens and concurrency must not be negative")
	}
	if c.LLM.BaseURL != "" && !strings.HasPrefix(c.LLM.BaseURL, "http://") && !strings.HasPrefix(c.LLM.BaseURL, "https://") {
		bad("llm.base_url", "%q must be an http(s) URL", c.LLM.BaseURL)
	}
	for key, env := range map[string]string{"llm.api_key_env": c.LLM.APIKeyEnv, "github.token_env": c.GitHub.TokenEnv,
		"github.private_key_env": c.GitHub.PrivateKeyEnv, "github.webhook_secret_env": c.GitHub.WebhookSecretEnv} {
		if env != "" && !envRE.MatchString(env) {
			bad(key, "%q is not an environment variable name (name the variable, never put the secret here)", env)
		}
	}
	if c.GitHub.APIURL != "" && !strings.HasPrefix(c.GitHub.APIURL, "https://") && !loopbackHTTP(c.GitHub.APIURL) {
		bad("github.api_url", "%q must be an https URL (plain http only on a loopback address): the token travels with every call", c.GitHub.APIURL)
	}
	for _, h := range c.GitHub.Hosts {
		if !hostRE.MatchString(h) {
			bad("github.hosts", "%q is not a host or host:port (no scheme, no path)", h)
		}
	}
	if c.GitHub.AppID < 0 || c.GitHub.InstallationID < 0 {
		bad("github", "app_id and installation_id must not be negative")
	}
	if c.Batch.Concurrency < 1 || c.Batch.Concurrency > 256 {
		bad("batch.concurrency", "must be between 1 and 256")
	}
	if c.Batch.CloneConcurrency < 1 || c.Batch.CloneConcurrency > 64 {
		bad("batch.clone_concurrency", "must be between 1 and 64")
	}
	if c.Batch.Timeout <= 0 {
		bad("batch.timeout", "must be positive")
	}
	if c.Bot.Workers < 1 || c.Bot.Queue < 1 || c.Bot.JobTimeout <= 0 {
		bad("bot", "workers and queue must be at least 1 and job_timeout positive")
	}
	if d := c.Bench.Dir; d != "" && (filepath.IsAbs(d) || d == ".." || strings.HasPrefix(filepath.ToSlash(filepath.Clean(d)), "../")) {
		bad("bench.dir", "%q must be a directory inside the repository, relative to its root", d)
	}
	for _, p := range c.Bench.Check() {
		bad("bench."+p.Key, "%s", p.Message)
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	return probs
}

func validRefPart(s string) bool {
	return s != "" && refPartRE.MatchString(s) && !strings.Contains(s, "..") &&
		!strings.HasSuffix(s, ".lock") && !strings.HasPrefix(s, "-") && !strings.HasSuffix(s, ".")
}

// BranchName is the delivery branch, <prefix>/<name>.
func (c *Config) BranchName() string { return c.Branch.Prefix + "/" + c.Branch.Name }

// Env reads a secret named by an *_env key; empty when unset.
func Env(name string) string {
	if name == "" {
		return ""
	}
	return os.Getenv(name)
}
