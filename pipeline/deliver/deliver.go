// Package deliver turns a migration run into git history and a pull request:
// a deterministic branch created from the base before any file is written,
// one commit per rewrite family (device code, Hugging Face, torch.compile,
// each kernel) staging only the files the run touched, the full report
// committed under .pallasify/, a push guarded by a lease, and a pull request
// found by its head branch and updated in place. A branch that someone other
// than pallasify pushed to is never overwritten, and a pull request a human
// closed for the same change set is never proposed again.
package deliver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/gh"
)

// PRService is what delivery needs from GitHub (*gh.Client implements it).
type PRService interface {
	Repo(ctx context.Context, owner, name string) (*gh.Repo, error)
	Fork(ctx context.Context, owner, name string) (*gh.Repo, error)
	FindClosed(ctx context.Context, spec gh.PRSpec) (*gh.PRResult, error)
	EnsurePR(ctx context.Context, spec gh.PRSpec) (*gh.PRResult, error)
}

// Options for Run.
type Options struct {
	// Config supplies branch, commit author and PR settings (default: config.Defaults()).
	Config *config.Config
	// Version is the pallasify version recorded in commit trailers.
	Version string
	// Push pushes the branch; PR (which implies Push) opens or updates a pull request.
	Push, PR bool
	// Remote is the remote to push to (default "origin").
	Remote string
	// Auth authenticates pushes to every remote (default: the clone's auth
	// for the remote it was cloned from, else src.Credentials by URL).
	Auth transport.AuthMethod
	// GitHub is used for --pr and forks.
	GitHub PRService
	// Owner and Repo name the GitHub repository (default: parsed from the
	// remote's URL).
	Owner, Repo string
	// Render renders the Markdown report (default RenderMarkdown).
	Render func(*pipeline.Run) ([]byte, error)
	// Reproduce is the command shown under "Reproduce locally".
	Reproduce string
	// Now stamps commits (default time.Now).
	Now func() time.Time
	// Logger receives progress (default: discard).
	Logger *slog.Logger
	// NetTimeout bounds each network call to a remote: listing its refs,
	// fetching the branch, pushing (default acquire.DefaultCloneTimeout).
	NetTimeout time.Duration
}

// Commit is one commit delivery made.
type Commit struct {
	Hash    string   `json:"hash"`
	Family  string   `json:"family"`
	Subject string   `json:"subject"`
	Files   []string `json:"files"`
	Codes   []string `json:"codes,omitempty"`
}

// Statuses of a delivery.
const (
	StatusNoChanges     = "no-changes"
	StatusCommitted     = "committed"       // branch made locally, not pushed
	StatusPushed        = "pushed"          // branch pushed (and PR handled when asked)
	StatusUpToDate      = "up-to-date"      // the remote branch already holds this change
	StatusClosedByHuman = "closed-by-human" // a human closed the PR for this change set
)

// Result is what Run did.
type Result struct {
	Status     string       `json:"status"`
	Branch     string       `json:"branch"`
	Base       string       `json:"base"`
	BaseHash   string       `json:"base_hash"`
	ChangeSet  string       `json:"change_set"`
	Commits    []Commit     `json:"commits,omitempty"`
	PushRemote string       `json:"push_remote,omitempty"`
	PR         *gh.PRResult `json:"pr,omitempty"`
	Message    string       `json:"message"`
}

// ErrForeignCommits is matched (errors.Is) by a ForeignCommitError.
var ErrForeignCommits = errors.New("the branch has commits not made by pallasify")

// ForeignCommitError stops a delivery: someone else pushed to the branch.
type ForeignCommitError struct {
	Branch, Commit, Author, Subject string
}

func (e *ForeignCommitError) Error() string {
	return fmt.Sprintf("branch %s has a commit not made by pallasify (%s by %s: %q); stopping without pushing. "+
		"Merge or move that work elsewhere and delete the branch to let pallasify regenerate it",
		e.Branch, short(e.Commit), e.Author, e.Subject)
}

func (e *ForeignCommitError) Is(target error) bool { return target == ErrForeignCommits }

// Trailer keys pallasify writes in every commit message.
const (
	TrailerVersion   = "Pallasify-Version"
	TrailerRules     = "Pallasify-Rules"
	TrailerBase      = "Pallasify-Base"
	TrailerChangeSet = "Pallasify-Change-Set"
)

// Run delivers run (computed on src.Dir) as commits on a branch, optionally
// pushed and proposed as a pull request.
func Run(ctx context.Context, src *acquire.Source, run *pipeline.Run, opts Options) (*Result, error) {
	d, err := newDelivery(src, run, opts)
	if err != nil {
		return nil, err
	}
	return d.deliver(ctx)
}

type delivery struct {
	src    *acquire.Source
	run    *pipeline.Run
	opts   Options
	cfg    *config.Config
	log    *slog.Logger
	repo   *git.Repository
	branch plumbing.ReferenceName
	res    *Result
}

func newDelivery(src *acquire.Source, run *pipeline.Run, opts Options) (*delivery, error) {
	if src == nil || src.Repo == nil || src.WorkTree == "" {
		return nil, errors.New("deliver: the tree is not a git work tree (use --write or --out instead of --branch)")
	}
	if src.Head.IsZero() {
		return nil, errors.New("deliver: the repository has no commits to branch from")
	}
	if opts.Config == nil {
		opts.Config = config.Defaults()
	}
	if opts.Remote == "" {
		opts.Remote = "origin"
	}
	if opts.NetTimeout <= 0 {
		opts.NetTimeout = acquire.DefaultCloneTimeout
	}
	if opts.Render == nil {
		opts.Render = RenderMarkdown
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.PR {
		opts.Push = true
		if opts.GitHub == nil {
			return nil, errors.New("deliver: --pr needs GitHub credentials")
		}
	}
	name := opts.Config.BranchName()
	if src.Base == name {
		return nil, fmt.Errorf("deliver: the checked-out branch is %s itself; run from the base branch", name)
	}
	d := &delivery{src: src, run: run, opts: opts, cfg: opts.Config, log: opts.Logger, repo: src.Repo,
		branch: plumbing.NewBranchReferenceName(name)}
	d.res = &Result{Branch: name, Base: src.Base, BaseHash: src.Head.String(), ChangeSet: ChangeSetID(run)}
	return d, nil
}

func (d *delivery) deliver(ctx context.Context) (*Result, error) {
	groups := GroupFiles(d.run)
	if len(groups) == 0 {
		d.res.Status, d.res.Message = StatusNoChanges, "nothing to change: no branch created"
		return d.res, nil
	}
	if err := d.checkCommitted(groups); err != nil {
		return nil, err
	}
	pushRemote := d.opts.Remote
	var spec gh.PRSpec
	if d.opts.PR {
		var err error
		if spec, pushRemote, err = d.preparePR(ctx); err != nil {
			return nil, err
		}
		closed, err := d.opts.GitHub.FindClosed(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("deliver: %w", err)
		}
		if closed != nil {
			d.res.Status, d.res.PR = StatusClosedByHuman, closed
			d.res.Message = fmt.Sprintf("pull request #%d proposing this exact change was closed by a human; not proposing it again", closed.Number)
			return d.res, nil
		}
	}
	var remoteTip plumbing.Hash
	if d.opts.Push {
		var err error
		if remoteTip, err = d.remoteBranch(ctx, pushRemote); err != nil {
			return nil, err
		}
		if !remoteTip.IsZero() {
			if err := d.fetchAndVerify(ctx, pushRemote, remoteTip); err != nil {
				return nil, err
			}
		}
	}
	localTip, err := d.localBranch()
	if err != nil {
		return nil, err
	}
	reportMD, err := d.opts.Render(stableRun(d.run))
	if err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	tip, commits, err := d.buildCommits(groups, reportMD)
	if err != nil {
		return nil, err
	}
	kept, err := d.keepOrMove(localTip, remoteTip, tip, commits)
	if err != nil {
		return nil, err
	}
	d.res.Status = StatusCommitted
	d.res.Message = fmt.Sprintf("%d commits on branch %s", len(d.res.Commits), d.res.Branch)
	if kept {
		d.res.Status = StatusUpToDate
		d.res.Message = fmt.Sprintf("branch %s already holds this change; nothing changed", d.res.Branch)
	}
	if !d.opts.Push {
		return d.res, nil
	}
	if url := d.remoteURL(pushRemote); url != "" {
		d.res.PushRemote = url
	}
	upToDate, err := d.sameAsRemote(remoteTip)
	if err != nil {
		return nil, err
	}
	if upToDate {
		d.res.Status = StatusUpToDate
		d.res.Message = fmt.Sprintf("branch %s already holds this change; nothing pushed", d.res.Branch)
	} else {
		if err := d.push(ctx, pushRemote, remoteTip); err != nil {
			return nil, err
		}
		d.res.Status = StatusPushed
		d.res.Message = fmt.Sprintf("pushed %d commits to %s", len(d.res.Commits), d.res.Branch)
	}
	if d.opts.PR {
		spec.Body = prBody(reportMD, d.res.Commits, d.reproduce(), gh.ChangeSetMarker(d.res.ChangeSet), d.cfg.PR.MaxBodyChars)
		pr, err := d.opts.GitHub.EnsurePR(ctx, spec)
		if err != nil {
			return d.res, fmt.Errorf("deliver: %w", err)
		}
		d.res.PR = pr
		d.res.Message += fmt.Sprintf("; pull request #%d %s", pr.Number, pr.Action)
	}
	d.log.InfoContext(ctx, "delivered", "branch", d.res.Branch, "status", d.res.Status, "commits", len(d.res.Commits))
	return d.res, nil
}

// checkCommitted refuses to commit a file whose content on disk is not
// what the base commit holds: the run read the working tree, so committing
// its result would smuggle the user's uncommitted (or untracked) work into
// pallasify's commits.
func (d *delivery) checkCommitted(groups []Group) error {
	base, err := d.baseTree()
	if err != nil {
		return err
	}
	var dirty []string
	for _, g := range groups {
		for _, f := range g.Files {
			if f.Original == nil {
				continue
			}
			rel := d.repoPath(f.Path)
			bf, err := base.File(rel)
			if err != nil {
				dirty = append(dirty, rel+" (not committed)")
				continue
			}
			if plumbing.ComputeHash(plumbing.BlobObject, f.Original) != bf.Hash {
				dirty = append(dirty, rel)
			}
		}
	}
	if len(dirty) > 0 {
		sort.Strings(dirty)
		return fmt.Errorf("deliver: %d file(s) to rewrite differ from the commit %s (%s): commit or stash them first, "+
			"so pallasify's branch holds only its own changes", len(dirty), short(d.src.Head.String()), strings.Join(firstN(dirty, 5), ", "))
	}
	return nil
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

func (d *delivery) baseTree() (*object.Tree, error) {
	c, err := d.repo.CommitObject(d.src.Head)
	if err != nil {
		return nil, fmt.Errorf("deliver: read the base commit: %w", err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("deliver: read the base tree: %w", err)
	}
	return t, nil
}

// buildCommits writes one commit per group and the report commit in the
// object store, each on the previous (the first on the base), and returns
// the last one. No ref moves and no file is written.
func (d *delivery) buildCommits(groups []Group, reportMD []byte) (plumbing.Hash, []Commit, error) {
	base, err := d.baseTree()
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	b := &treeBuilder{s: d.repo.Storer, base: base}
	parent := d.src.Head
	var out []Commit
	commit := func(c Commit, msg string) error {
		th, err := b.tree()
		if err != nil {
			return fmt.Errorf("deliver: %w", err)
		}
		sig := d.signature()
		h, err := b.commit(&object.Commit{Author: *sig, Committer: *sig, Message: msg, TreeHash: th, ParentHashes: []plumbing.Hash{parent}})
		if err != nil {
			return fmt.Errorf("deliver: commit: %w", err)
		}
		c.Hash, parent = h.String(), h
		out = append(out, c)
		return nil
	}
	for _, g := range groups {
		var body strings.Builder
		c := Commit{Family: g.Key, Subject: g.Subject, Codes: g.Codes}
		for _, f := range g.Files {
			rel := d.repoPath(f.Path)
			if err := b.put(rel, f.Updated, d.fileMode(f)); err != nil {
				return plumbing.ZeroHash, nil, fmt.Errorf("deliver: %s: %w", rel, err)
			}
			c.Files = append(c.Files, rel)
			n := 0
			for _, dg := range f.Diagnostics {
				if dg.Applied {
					n++
				}
			}
			if f.Generated {
				fmt.Fprintf(&body, "- %s (generated)\n", rel)
			} else {
				fmt.Fprintf(&body, "- %s: %d rewrite%s\n", rel, n, plural(n))
			}
		}
		if err := commit(c, d.message(g.Subject, body.String(), g.Codes)); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	rel := d.repoPath(ReportPath)
	if err := b.put(rel, reportMD, 0o644); err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("deliver: %w", err)
	}
	subject := "add the migration report"
	c := Commit{Family: "report", Subject: subject, Files: []string{rel}}
	if err := commit(c, d.message(subject, "The full pallasify report for this branch (the pull request body may be a truncated copy).", nil)); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return parent, out, nil
}

// fileMode is the mode a file is committed with: the run's, else the one on
// disk, else 0644.
func (d *delivery) fileMode(f *pipeline.File) fs.FileMode {
	if f.Mode.IsRegular() && f.Mode.Perm() != 0 {
		return f.Mode
	}
	full := filepath.Join(d.src.WorkTree, filepath.FromSlash(d.repoPath(f.Path)))
	if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() {
		return fi.Mode()
	}
	return 0o644
}

// localBranch returns the local delivery branch's tip (zero when absent)
// after checking that only pallasify committed to it since its base: a
// branch someone worked on is never moved.
func (d *delivery) localBranch() (plumbing.Hash, error) {
	ref, err := d.repo.Reference(d.branch, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("deliver: %w", err)
	}
	if err := d.verifyOwn(ref.Hash()); err != nil {
		return plumbing.ZeroHash, err
	}
	return ref.Hash(), nil
}

// keepOrMove points the branch at tip, unless the branch already holds the
// same change on the same base (a re-run): then it stays as it is, and the
// result lists its commits. kept reports which.
func (d *delivery) keepOrMove(localTip, remoteTip, tip plumbing.Hash, built []Commit) (kept bool, err error) {
	for _, old := range []plumbing.Hash{localTip, remoteTip} {
		if old.IsZero() || !d.sameChange(old, tip) {
			continue
		}
		commits, err := d.branchCommits(old, built)
		if err != nil {
			return false, err
		}
		if err := d.repo.Storer.SetReference(plumbing.NewHashReference(d.branch, old)); err != nil {
			return false, fmt.Errorf("deliver: %w", err)
		}
		d.res.Commits = commits
		return old == localTip, nil
	}
	if err := d.repo.Storer.SetReference(plumbing.NewHashReference(d.branch, tip)); err != nil {
		return false, fmt.Errorf("deliver: create branch: %w", err)
	}
	d.res.Commits = built
	return false, nil
}

// sameChange reports whether commit a holds the same tree as b on the same
// base.
func (d *delivery) sameChange(a, b plumbing.Hash) bool {
	ca, err := d.repo.CommitObject(a)
	if err != nil {
		return false
	}
	cb, err := d.repo.CommitObject(b)
	if err != nil {
		return false
	}
	return ca.TreeHash == cb.TreeHash && trailers(ca.Message)[TrailerBase] == d.src.Head.String()
}

// branchCommits lists the commits of the branch at tip since the base, in
// order, described like built (same families, one for one).
func (d *delivery) branchCommits(tip plumbing.Hash, built []Commit) ([]Commit, error) {
	var hashes []plumbing.Hash
	for h := tip; h != d.src.Head; {
		c, err := d.repo.CommitObject(h)
		if err != nil || len(c.ParentHashes) != 1 || len(hashes) > 256 {
			return nil, fmt.Errorf("deliver: cannot walk %s: %v", d.branch.Short(), err)
		}
		hashes = append(hashes, h)
		h = c.ParentHashes[0]
	}
	if len(hashes) != len(built) {
		return built, nil
	}
	out := make([]Commit, len(built))
	for i := range built {
		out[i] = built[i]
		out[i].Hash = hashes[len(hashes)-1-i].String()
	}
	return out, nil
}

func (d *delivery) reproduce() string {
	if d.opts.Reproduce != "" {
		return d.opts.Reproduce
	}
	target := d.run.Target
	if target == "" {
		target = d.cfg.Target
	}
	return fmt.Sprintf("pallasify migrate . --target %s   # dry run: prints the diff of this branch", target)
}

// preparePR resolves owner/repo, the base branch and whether to push to a fork.
func (d *delivery) preparePR(ctx context.Context) (gh.PRSpec, string, error) {
	owner, name := d.opts.Owner, d.opts.Repo
	if owner == "" || name == "" {
		var ok bool
		url := d.remoteURL(d.opts.Remote)
		if !d.src.Credentials.IsGitHub(url) {
			return gh.PRSpec{}, "", fmt.Errorf("deliver: --pr needs a GitHub remote: %s is %q, not on %s",
				d.opts.Remote, url, strings.Join(d.src.Credentials.GitHubHosts(), " or "))
		}
		if owner, name, ok = acquire.OwnerRepo(url); !ok {
			return gh.PRSpec{}, "", errors.New("deliver: cannot tell the GitHub repository from the remote URL")
		}
	}
	info, err := d.opts.GitHub.Repo(ctx, owner, name)
	if err != nil {
		return gh.PRSpec{}, "", fmt.Errorf("deliver: %w", err)
	}
	base := d.src.Base
	if base == "" {
		base = info.DefaultBranch
	}
	d.res.Base = base
	spec := gh.PRSpec{Owner: owner, Repo: name, Base: base, Head: d.res.Branch, Title: d.cfg.PR.Title,
		Draft: d.cfg.PR.IsDraft(), Labels: d.cfg.PR.Labels, ChangeSet: d.res.ChangeSet}
	fork := d.cfg.PR.Fork
	if fork == "always" || (fork == "auto" && !info.CanPush) {
		f, err := d.opts.GitHub.Fork(ctx, owner, name)
		if err != nil {
			return spec, "", fmt.Errorf("deliver: %w", err)
		}
		if err := d.setRemote("pallasify-fork", f.CloneURL); err != nil {
			return spec, "", err
		}
		spec.HeadOwner = f.Owner
		return spec, "pallasify-fork", nil
	}
	if !info.CanPush && fork == "never" {
		return spec, "", errors.New("deliver: the token cannot push to the repository and pr.fork is never")
	}
	return spec, d.opts.Remote, nil
}

func (d *delivery) setRemote(name, url string) error {
	if url == "" {
		return errors.New("deliver: the fork has no clone URL")
	}
	if r, err := d.repo.Remote(name); err == nil {
		if len(r.Config().URLs) > 0 && r.Config().URLs[0] == url {
			return nil
		}
		if err := d.repo.DeleteRemote(name); err != nil {
			return fmt.Errorf("deliver: %w", err)
		}
	}
	if _, err := d.repo.CreateRemote(&gitconfig.RemoteConfig{Name: name, URLs: []string{url}}); err != nil {
		return fmt.Errorf("deliver: add fork remote: %w", err)
	}
	return nil
}

func (d *delivery) remoteURL(name string) string {
	r, err := d.repo.Remote(name)
	if err != nil || len(r.Config().URLs) == 0 {
		return ""
	}
	clean, _ := acquire.StripCredentials(r.Config().URLs[0])
	return clean
}

// remoteBranch returns the remote's tip of the delivery branch (zero if absent).
func (d *delivery) remoteBranch(ctx context.Context, remote string) (plumbing.Hash, error) {
	r, err := d.repo.Remote(remote)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("deliver: remote %q: %w", remote, err)
	}
	var refs []*plumbing.Reference
	err = acquire.Bounded(ctx, "listing the refs of "+remote, d.opts.NetTimeout, func(ctx context.Context) (err error) {
		refs, err = r.ListContext(ctx, &git.ListOptions{Auth: d.auth(remote), CABundle: d.src.Credentials.CABundle})
		return err
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("deliver: list %s: %w", remote, err)
	}
	for _, ref := range refs {
		if ref.Name() == d.branch {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, nil
}

func (d *delivery) trackingRef(remote string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remote, d.branch.Short())
}

// fetchAndVerify fetches the existing branch and checks that every commit
// on it since its base was made by pallasify.
func (d *delivery) fetchAndVerify(ctx context.Context, remote string, tip plumbing.Hash) error {
	spec := gitconfig.RefSpec(fmt.Sprintf("+%s:%s", d.branch, d.trackingRef(remote)))
	err := acquire.Bounded(ctx, "fetching "+d.branch.Short(), d.opts.NetTimeout, func(ctx context.Context) error {
		return d.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: remote, Auth: d.auth(remote),
			RefSpecs: []gitconfig.RefSpec{spec}, Depth: 64, Tags: git.NoTags, CABundle: d.src.Credentials.CABundle})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("deliver: fetch %s: %w", d.branch.Short(), err)
	}
	return d.verifyOwn(tip)
}

// verifyOwn checks that every commit from tip down to its base was made by
// pallasify (its trailers, its committer, one parent each).
func (d *delivery) verifyOwn(tip plumbing.Hash) error {
	email := d.cfg.Commit.AuthorEmail
	h := tip
	for range 256 {
		c, err := d.repo.CommitObject(h)
		if err != nil {
			return fmt.Errorf("deliver: cannot inspect %s at %s (history too deep or missing): %w", d.branch.Short(), short(h.String()), err)
		}
		tr := trailers(c.Message)
		if tr[TrailerVersion] == "" || tr[TrailerBase] == "" || c.Committer.Email != email || len(c.ParentHashes) != 1 {
			subject, _, _ := strings.Cut(c.Message, "\n")
			return &ForeignCommitError{Branch: d.branch.Short(), Commit: c.Hash.String(),
				Author: fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email), Subject: subject}
		}
		if c.ParentHashes[0].String() == tr[TrailerBase] {
			return nil
		}
		h = c.ParentHashes[0]
	}
	return fmt.Errorf("deliver: branch %s has more commits than pallasify makes; stopping", d.branch.Short())
}

// auth is the auth for a remote: Options.Auth when given; for the remote the
// source was cloned from, the clone's auth; otherwise the source's
// credentials decide by the remote's URL (a token only over HTTPS to its
// own hosts).
func (d *delivery) auth(remote string) transport.AuthMethod {
	if d.opts.Auth != nil {
		return d.opts.Auth
	}
	if remote == "origin" && d.src.Cloned {
		return d.src.Auth
	}
	return d.src.Credentials.AuthFor(d.remoteURL(remote))
}

// trailers parses "Key: value" lines of the last paragraph of a message.
func trailers(msg string) map[string]string {
	msg = strings.TrimRight(msg, "\n")
	if i := strings.LastIndex(msg, "\n\n"); i >= 0 {
		msg = msg[i+2:]
	}
	out := map[string]string{}
	for _, line := range strings.Split(msg, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.ContainsAny(k, " \t") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

func (d *delivery) signature() *object.Signature {
	return &object.Signature{Name: d.cfg.Commit.AuthorName, Email: d.cfg.Commit.AuthorEmail, When: d.opts.Now()}
}

// repoPath maps a run path (relative to the run root) to the work tree.
func (d *delivery) repoPath(p string) string {
	if d.src.Prefix == "" {
		return p
	}
	return path.Join(d.src.Prefix, p)
}

func (d *delivery) message(subject, body string, codes []string) string {
	var b strings.Builder
	b.WriteString("pallasify: " + subject + "\n\n")
	if body != "" {
		b.WriteString(strings.TrimRight(body, "\n") + "\n\n")
	}
	fmt.Fprintf(&b, "%s: %s\n", TrailerVersion, orDefault(d.opts.Version, "dev"))
	if len(codes) > 0 {
		fmt.Fprintf(&b, "%s: %s\n", TrailerRules, strings.Join(codes, ", "))
	}
	fmt.Fprintf(&b, "%s: %s\n", TrailerBase, d.src.Head)
	fmt.Fprintf(&b, "%s: %s\n", TrailerChangeSet, d.res.ChangeSet)
	return b.String()
}

// sameAsRemote reports whether the remote branch already has our tree on
// the same base.
func (d *delivery) sameAsRemote(remoteTip plumbing.Hash) (bool, error) {
	if remoteTip.IsZero() {
		return false, nil
	}
	theirs, err := d.repo.CommitObject(remoteTip)
	if err != nil {
		return false, nil
	}
	ref, err := d.repo.Reference(d.branch, true)
	if err != nil {
		return false, fmt.Errorf("deliver: %w", err)
	}
	ours, err := d.repo.CommitObject(ref.Hash())
	if err != nil {
		return false, fmt.Errorf("deliver: %w", err)
	}
	return ours.TreeHash == theirs.TreeHash && trailers(theirs.Message)[TrailerBase] == d.src.Head.String(), nil
}

func (d *delivery) push(ctx context.Context, remote string, remoteTip plumbing.Hash) error {
	po := &git.PushOptions{RemoteName: remote, Auth: d.auth(remote), CABundle: d.src.Credentials.CABundle,
		RefSpecs: []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("%s:%s", d.branch, d.branch))}}
	if !remoteTip.IsZero() {
		// Regenerated from the base: replace the old branch, but only if it
		// still is what we verified.
		po.ForceWithLease = &git.ForceWithLease{RefName: d.branch, Hash: remoteTip}
	}
	err := acquire.Bounded(ctx, "pushing "+d.branch.Short(), d.opts.NetTimeout, func(ctx context.Context) error {
		return d.repo.PushContext(ctx, po)
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("deliver: push %s: %w", d.branch.Short(), err)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
