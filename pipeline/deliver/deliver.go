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
	// Auth authenticates pushes (default: the auth the source was cloned with).
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
	if opts.Auth == nil {
		opts.Auth = src.Auth
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
	if err := d.createBranch(); err != nil {
		return nil, err
	}
	for _, g := range groups {
		c, err := d.commitGroup(g)
		if err != nil {
			return nil, err
		}
		d.res.Commits = append(d.res.Commits, c)
	}
	reportMD, err := d.opts.Render(stableRun(d.run))
	if err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	c, err := d.commitReport(reportMD)
	if err != nil {
		return nil, err
	}
	d.res.Commits = append(d.res.Commits, c)
	d.res.Status = StatusCommitted
	d.res.Message = fmt.Sprintf("%d commits on branch %s", len(d.res.Commits), d.res.Branch)
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
		if owner, name, ok = acquire.OwnerRepo(d.remoteURL(d.opts.Remote)); !ok {
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
	refs, err := r.ListContext(ctx, &git.ListOptions{Auth: d.opts.Auth})
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
	err := d.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: remote, Auth: d.opts.Auth,
		RefSpecs: []gitconfig.RefSpec{spec}, Depth: 64, Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("deliver: fetch %s: %w", d.branch.Short(), err)
	}
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

// createBranch points the delivery branch at the base commit and checks it
// out, before any file is written.
func (d *delivery) createBranch() error {
	ref := plumbing.NewHashReference(d.branch, d.src.Head)
	if err := d.repo.Storer.SetReference(ref); err != nil {
		return fmt.Errorf("deliver: create branch: %w", err)
	}
	wt, err := d.repo.Worktree()
	if err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Branch: d.branch, Keep: true}); err != nil {
		return fmt.Errorf("deliver: check out %s: %w", d.branch.Short(), err)
	}
	return nil
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

func (d *delivery) writeAndStage(wt *git.Worktree, rel string, data []byte, mode fs.FileMode) error {
	full := filepath.Join(d.src.WorkTree, filepath.FromSlash(rel))
	if !mode.IsRegular() || mode.Perm() == 0 {
		mode = 0o644
		if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() {
			mode = fi.Mode()
		}
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	if err := pipeline.WriteFileAtomic(full, data, mode); err != nil {
		return fmt.Errorf("deliver: %w", err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{Path: rel, SkipStatus: true}); err != nil {
		return fmt.Errorf("deliver: stage %s: %w", rel, err)
	}
	return nil
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

func (d *delivery) commit(wt *git.Worktree, msg string) (plumbing.Hash, error) {
	sig := d.signature()
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("deliver: commit: %w", err)
	}
	return h, nil
}

func (d *delivery) commitGroup(g Group) (Commit, error) {
	wt, err := d.repo.Worktree()
	if err != nil {
		return Commit{}, fmt.Errorf("deliver: %w", err)
	}
	var body strings.Builder
	c := Commit{Family: g.Key, Subject: g.Subject, Codes: g.Codes}
	for _, f := range g.Files {
		rel := d.repoPath(f.Path)
		if err := d.writeAndStage(wt, rel, f.Updated, f.Mode); err != nil {
			return Commit{}, err
		}
		c.Files = append(c.Files, rel)
		n := 0
		for _, dg := range f.Diagnostics {
			if dg.Applied {
				n++
			}
		}
		switch {
		case f.Generated:
			fmt.Fprintf(&body, "- %s (generated)\n", rel)
		default:
			fmt.Fprintf(&body, "- %s: %d rewrite%s\n", rel, n, plural(n))
		}
	}
	h, err := d.commit(wt, d.message(g.Subject, body.String(), g.Codes))
	if err != nil {
		return Commit{}, err
	}
	c.Hash = h.String()
	return c, nil
}

func (d *delivery) commitReport(md []byte) (Commit, error) {
	wt, err := d.repo.Worktree()
	if err != nil {
		return Commit{}, fmt.Errorf("deliver: %w", err)
	}
	rel := d.repoPath(ReportPath)
	if err := d.writeAndStage(wt, rel, md, 0o644); err != nil {
		return Commit{}, err
	}
	subject := "add the migration report"
	h, err := d.commit(wt, d.message(subject, "The full pallasify report for this branch (the pull request body may be a truncated copy).", nil))
	if err != nil {
		return Commit{}, err
	}
	return Commit{Hash: h.String(), Family: "report", Subject: subject, Files: []string{rel}}, nil
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
	po := &git.PushOptions{RemoteName: remote, Auth: d.opts.Auth,
		RefSpecs: []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("%s:%s", d.branch, d.branch))}}
	if !remoteTip.IsZero() {
		// Regenerated from the base: replace the old branch, but only if it
		// still is what we verified.
		po.ForceWithLease = &git.ForceWithLease{RefName: d.branch, Hash: remoteTip}
	}
	err := d.repo.PushContext(ctx, po)
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
