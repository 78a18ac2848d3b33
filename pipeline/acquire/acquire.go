// Package acquire turns what the user named — a local path or a git URL —
// into a local working tree: local paths are used in place, URLs are cloned
// with go-git (depth 1, one branch, no tags) into a per-run workspace that is
// removed afterwards unless asked to keep it. Clones are bounded by a Limiter
// because a clone can peak at several times the repository's size in memory.
package acquire

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Limiter bounds concurrent clones. A nil Limiter does not limit.
type Limiter chan struct{}

// NewLimiter allows n concurrent clones (n < 1 means 1).
func NewLimiter(n int) Limiter {
	if n < 1 {
		n = 1
	}
	return make(Limiter, n)
}

func (l Limiter) acquire(ctx context.Context) error {
	if l == nil {
		return nil
	}
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l Limiter) release() {
	if l != nil {
		<-l
	}
}

// Options for Open.
type Options struct {
	// Workspace is the parent directory of per-run clone directories
	// (default: the system temp dir).
	Workspace string
	// Keep leaves the clone on disk after Cleanup.
	Keep bool
	// Token authenticates HTTPS clones (basic auth, user x-access-token),
	// but only of URLs on TokenHosts (see Credentials).
	Token string
	// TokenHosts are the hosts Token belongs to (default: github.com).
	TokenHosts []string
	// Auth overrides Token (e.g. SSH auth).
	Auth transport.AuthMethod
	// CABundle is extra PEM certificates trusted for HTTPS (a GitHub
	// Enterprise with a private CA; tests).
	CABundle []byte
	// Branch is the branch to clone (default: the remote's HEAD).
	Branch string
	// Depth of the clone (default 1).
	Depth int
	// Limiter bounds concurrent clones.
	Limiter Limiter
	// CloneTimeout bounds one clone, from its start to its checkout
	// (default DefaultCloneTimeout; negative: no limit). Waiting for a
	// Limiter slot does not count.
	CloneTimeout time.Duration
	// IdleTimeout fails a clone that makes no progress for this long: no
	// progress message from the remote and no byte written to the clone
	// (default DefaultIdleTimeout; negative: no limit).
	IdleTimeout time.Duration
}

// Source is an acquired tree.
type Source struct {
	// Dir is the root the pipeline should run on.
	Dir string
	// WorkTree is the root of the git work tree containing Dir ("" if none).
	WorkTree string
	// Prefix is Dir relative to WorkTree, slash-separated ("" when equal).
	Prefix string
	// URL is the clone URL without credentials ("" for local paths).
	URL string
	// Base is the short name of the checked-out branch ("" if detached/none).
	Base string
	// Head is the checked-out commit (zero if not a git tree).
	Head plumbing.Hash
	// Repo is the git repository (nil when Dir is not in one).
	Repo *git.Repository
	// Auth is what was used to clone; delivery pushes with it.
	Auth transport.AuthMethod
	// Credentials decide the auth of other remotes (a fork) the same way.
	Credentials Credentials
	// Cloned is true when Dir is a clone made by Open.
	Cloned bool

	cleanup func() error
}

// Cleanup removes the clone (unless Keep) and is safe to call twice.
func (s *Source) Cleanup() error {
	if s == nil || s.cleanup == nil {
		return nil
	}
	f := s.cleanup
	s.cleanup = nil
	return f()
}

var scpLikeRE = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/].*$`)

// IsRemote reports whether s names a git URL rather than a local path.
func IsRemote(s string) bool {
	for _, p := range []string{"https://", "http://", "ssh://", "git://", "file://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return scpLikeRE.MatchString(s)
}

// StripCredentials removes user info from a URL and returns the password (a
// token) it carried, so credentials never travel in URLs or error messages.
func StripCredentials(raw string) (clean, token string) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || (u.Scheme != "https" && u.Scheme != "http") {
		return raw, ""
	}
	token, _ = u.User.Password()
	if token == "" {
		token = u.User.Username()
	}
	u.User = nil
	return u.String(), token
}

// Credentials is a token and the hosts it belongs to. A token is sent only
// over HTTPS and only to those hosts: a clone URL anywhere else goes
// unauthenticated, so a list entry, a fork URL or a pallasify.yaml can never
// route the operator's token to a server of its choosing.
type Credentials struct {
	Token string
	// Hosts are host or host:port names, lower-case (default: github.com).
	Hosts []string
	// CABundle is extra PEM certificates trusted for HTTPS.
	CABundle []byte
}

// Allows reports whether the token may be sent to rawURL: an https URL
// whose host (with its port, when it has one) is one of c.Hosts.
func (c Credentials) Allows(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Host)
	for _, h := range c.GitHubHosts() {
		h = strings.ToLower(h)
		if host == h || (u.Port() == "443" && strings.ToLower(u.Hostname()) == h) {
			return true
		}
	}
	return false
}

// GitHubHosts are c.Hosts, or github.com when none are set.
func (c Credentials) GitHubHosts() []string {
	if len(c.Hosts) == 0 {
		return []string{"github.com"}
	}
	return c.Hosts
}

// AuthFor is the auth for a git remote: basic auth with the token when
// Allows(rawURL), else nil (anonymous).
func (c Credentials) AuthFor(rawURL string) transport.AuthMethod {
	if c.Token == "" || !c.Allows(rawURL) {
		return nil
	}
	return BasicAuth(c.Token)
}

// IsGitHub reports whether rawURL (https, ssh or scp-like) is on one of the
// GitHub hosts, so a pull request can be opened for it.
func (c Credentials) IsGitHub(rawURL string) bool {
	host := URLHost(rawURL)
	if host == "" {
		return false
	}
	for _, h := range c.GitHubHosts() {
		h = strings.ToLower(h)
		if host == h || strings.SplitN(host, ":", 2)[0] == h {
			return true
		}
	}
	return false
}

// URLHost is the lower-cased host (with port) of a git URL ("" for local
// paths and file:// URLs).
func URLHost(rawURL string) string {
	clean, _ := StripCredentials(rawURL)
	if scpLikeRE.MatchString(clean) && !strings.Contains(clean, "://") {
		at := strings.Index(clean, "@")
		return strings.ToLower(clean[at+1 : strings.Index(clean, ":")])
	}
	u, err := url.Parse(clean)
	if err != nil || u.Scheme == "file" {
		return ""
	}
	return strings.ToLower(u.Host)
}

// BasicAuth is the go-git auth for a GitHub token (its String() masks the
// password).
func BasicAuth(token string) transport.AuthMethod {
	if token == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: "x-access-token", Password: token}
}

// Open acquires pathOrURL.
func Open(ctx context.Context, pathOrURL string, opts Options) (*Source, error) {
	if IsRemote(pathOrURL) {
		return clone(ctx, pathOrURL, opts)
	}
	src, err := openLocal(pathOrURL)
	if err != nil {
		return nil, err
	}
	src.Credentials = Credentials{Token: opts.Token, Hosts: opts.TokenHosts, CABundle: opts.CABundle}
	return src, nil
}

func openLocal(path string) (*Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("acquire: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("acquire %s: not a directory", path)
	}
	src := &Source{Dir: abs}
	repo, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return src, nil
	}
	if err != nil {
		return nil, fmt.Errorf("acquire %s: open git repository: %w", path, err)
	}
	if err := src.fill(repo); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	return src, nil
}

func (s *Source) fill(repo *git.Repository) error {
	s.Repo = repo
	wt, err := repo.Worktree()
	if err != nil {
		// A bare repository: usable for analysis of Dir, not for delivery.
		return nil
	}
	s.WorkTree = wt.Filesystem.Root()
	if real, err := filepath.EvalSymlinks(s.WorkTree); err == nil {
		s.WorkTree = real
	}
	dir := s.Dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	rel, err := filepath.Rel(s.WorkTree, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is outside its work tree %s", s.Dir, s.WorkTree)
	}
	if rel != "." {
		s.Prefix = filepath.ToSlash(rel)
	}
	head, err := repo.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil // no commits yet
	}
	if err != nil {
		return fmt.Errorf("read HEAD: %w", err)
	}
	s.Head = head.Hash()
	if head.Name().IsBranch() {
		s.Base = head.Name().Short()
	}
	return nil
}

func clone(ctx context.Context, rawURL string, opts Options) (src *Source, err error) {
	cleanURL, urlToken := StripCredentials(rawURL)
	creds := Credentials{Token: opts.Token, Hosts: opts.TokenHosts, CABundle: opts.CABundle}
	auth := opts.Auth
	if auth == nil && urlToken != "" {
		// The user put credentials in this very URL: they go to its host,
		// but never in clear text.
		if !strings.HasPrefix(cleanURL, "https://") {
			return nil, fmt.Errorf("acquire %s: credentials in a plain-http URL would travel in clear text; use https", cleanURL)
		}
		auth = BasicAuth(urlToken)
	}
	if auth == nil {
		auth = creds.AuthFor(cleanURL)
	}
	depth := opts.Depth
	if depth == 0 {
		depth = 1
	}
	if err := opts.Limiter.acquire(ctx); err != nil {
		return nil, fmt.Errorf("acquire %s: waiting for a clone slot: %w", cleanURL, err)
	}
	defer opts.Limiter.release()

	if opts.Workspace != "" {
		if err := os.MkdirAll(opts.Workspace, 0o755); err != nil {
			return nil, fmt.Errorf("acquire: workspace: %w", err)
		}
	}
	ws, err := os.MkdirTemp(opts.Workspace, "pallasify-run-*")
	if err != nil {
		return nil, fmt.Errorf("acquire: workspace: %w", err)
	}
	remove := func() error {
		if opts.Keep {
			return nil
		}
		return os.RemoveAll(ws)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(ws)
		}
	}()
	dir := filepath.Join(ws, repoDirName(cleanURL))
	co := &git.CloneOptions{
		URL:          cleanURL,
		Auth:         auth,
		Depth:        depth,
		SingleBranch: true,
		Tags:         git.NoTags,
		CABundle:     opts.CABundle,
	}
	if opts.Branch != "" {
		co.ReferenceName = plumbing.NewBranchReferenceName(opts.Branch)
	}
	repo, err := watchedClone(ctx, dir, cleanURL, co, opts.CloneTimeout, opts.IdleTimeout, func() { os.RemoveAll(ws) })
	if err != nil {
		return nil, err
	}
	src = &Source{Dir: dir, URL: cleanURL, Auth: auth, Credentials: creds, Cloned: true, cleanup: remove}
	if err := src.fill(repo); err != nil {
		return nil, fmt.Errorf("acquire %s: %w", cleanURL, err)
	}
	return src, nil
}

// ResolveHead returns the commit pathOrURL would be migrated at, without
// cloning: for a git URL the head of branch (default: the remote's HEAD)
// as the remote lists it (the token only where creds allow; a remote that
// has not answered within DefaultIdleTimeout fails with CodeStalled), for a
// local path its checked-out commit ("" outside git).
func ResolveHead(ctx context.Context, pathOrURL, branch string, creds Credentials) (string, error) {
	if !IsRemote(pathOrURL) {
		repo, err := git.PlainOpenWithOptions(pathOrURL, &git.PlainOpenOptions{DetectDotGit: true})
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("open %s: %w", pathOrURL, err)
		}
		head, err := repo.Head()
		if err != nil {
			return "", fmt.Errorf("%s: read HEAD: %w", pathOrURL, err)
		}
		return head.Hash().String(), nil
	}
	clean, _ := StripCredentials(pathOrURL)
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{clean}})
	lctx, cancel := context.WithTimeoutCause(ctx, DefaultIdleTimeout,
		fmt.Errorf("%s: listing the refs of %s got no answer within %s", CodeStalled, clean, DefaultIdleTimeout))
	defer cancel()
	refs, err := rem.ListContext(lctx, &git.ListOptions{Auth: creds.AuthFor(clean), CABundle: creds.CABundle})
	if err != nil {
		if ctx.Err() == nil && lctx.Err() != nil {
			return "", context.Cause(lctx)
		}
		return "", fmt.Errorf("list %s: %w", clean, err)
	}
	want := plumbing.HEAD
	if branch != "" {
		want = plumbing.NewBranchReferenceName(branch)
	}
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	for range 5 {
		r, ok := byName[want]
		if !ok {
			return "", fmt.Errorf("%s has no %s", clean, want.Short())
		}
		if r.Type() == plumbing.HashReference {
			return r.Hash().String(), nil
		}
		want = r.Target()
	}
	return "", fmt.Errorf("%s: symbolic reference loop at %s", clean, want)
}

// RemoteURL is the URL (without credentials) of remote name of the git
// repository containing path, or "" (no repository, no such remote). It
// reads the repository's config only; nothing goes over the network.
func RemoteURL(path, name string) string {
	repo, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return ""
	}
	r, err := repo.Remote(name)
	if err != nil || len(r.Config().URLs) == 0 {
		return ""
	}
	clean, _ := StripCredentials(r.Config().URLs[0])
	return clean
}

var nonNameRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func repoDirName(u string) string {
	u = strings.TrimSuffix(strings.TrimRight(u, "/"), ".git")
	if i := strings.LastIndexAny(u, "/:"); i >= 0 {
		u = u[i+1:]
	}
	u = nonNameRE.ReplaceAllString(u, "-")
	if u == "" || u == "." || u == ".." {
		return "repo"
	}
	return u
}

// OwnerRepo extracts owner and name from a GitHub-style URL
// (https://host/owner/repo(.git), git@host:owner/repo.git). ok is false when
// the URL has no such shape.
func OwnerRepo(rawURL string) (owner, repo string, ok bool) {
	clean, _ := StripCredentials(rawURL)
	path := clean
	if u, err := url.Parse(clean); err == nil && u.Scheme != "" {
		path = u.Path
	} else if scpLikeRE.MatchString(clean) {
		path = clean[strings.Index(clean, ":")+1:]
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(strings.TrimRight(path, "/"), ".git"), "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return "", "", false
	}
	return parts[len(parts)-2], parts[len(parts)-1], true
}
