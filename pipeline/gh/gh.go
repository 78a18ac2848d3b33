// Package gh is pallasify's GitHub client: repositories, forks, pull requests
// found by head branch and updated in place, labels, comments and permission
// checks, over go-github v88. Content-creating calls go one at a time per
// client (GitHub's secondary limits punish concurrency), and a transport waits
// out primary and secondary rate limits (Retry-After, x-ratelimit-reset).
package gh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v88/github"
)

// Options configure a Client.
type Options struct {
	// APIURL is the REST base URL ("" or https://api.github.com/ for github.com).
	APIURL string
	// Token is a PAT or installation token. Ignored when Transport already
	// authenticates (a GitHub App installation transport).
	Token string
	// Transport is the base round tripper (default http.DefaultTransport).
	Transport http.RoundTripper
	// MaxWait caps one rate-limit wait (default 2 minutes); longer waits
	// surface as errors.
	MaxWait time.Duration
	// MinGap is the minimum time between content-creating calls (default 1s;
	// tests set a negative value for none).
	MinGap time.Duration
	// Logger receives rate-limit waits (default: discard).
	Logger *slog.Logger
	// RequestTimeout bounds one attempt of a call, its answer's body
	// included (default DefaultRequestTimeout): an API that accepts and
	// then says nothing fails the call instead of hanging it.
	RequestTimeout time.Duration
}

// DefaultRequestTimeout is Options.RequestTimeout's default.
const DefaultRequestTimeout = 2 * time.Minute

// Client talks to one GitHub (or GitHub Enterprise, or a fake) as one identity.
type Client struct {
	API    *github.Client
	log    *slog.Logger
	gap    time.Duration
	mu     sync.Mutex // held for each content-creating call
	lastCC time.Time
}

// New builds a Client.
func New(opts Options) (*Client, error) {
	base := opts.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	maxWait := opts.MaxWait
	if maxWait == 0 {
		maxWait = 2 * time.Minute
	}
	timeout := opts.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	rt := &rateLimitTransport{base: base, maxWait: maxWait, log: log, timeout: timeout}
	// Waits happen in rt; go-github's own pre-emptive check would refuse
	// calls instead of waiting.
	copts := []github.ClientOptionsFunc{github.WithTransport(rt), github.WithDisableRateLimitCheck(), github.WithUserAgent("pallasify")}
	if opts.Token != "" {
		copts = append(copts, github.WithAuthToken(opts.Token))
	}
	if opts.APIURL != "" {
		base := strings.TrimRight(opts.APIURL, "/") + "/"
		copts = append(copts, github.WithURLs(&base, &base))
	}
	api, err := github.NewClient(copts...)
	if err != nil {
		return nil, fmt.Errorf("github client: %w", err)
	}
	gap := opts.MinGap
	if gap == 0 {
		gap = time.Second
	}
	return &Client{API: api, log: log, gap: gap}, nil
}

// AppTransport authenticates as a GitHub App installation (ghinstallation);
// its Token method gives the installation token for git pushes.
func AppTransport(base http.RoundTripper, apiURL string, appID, installationID int64, privateKeyPEM []byte) (*ghinstallation.Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	itr, err := ghinstallation.New(base, appID, installationID, privateKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("github app auth: %w", err)
	}
	if apiURL != "" {
		itr.BaseURL = strings.TrimRight(apiURL, "/")
	}
	return itr, nil
}

// creating serialises content-creating calls and spaces them by MinGap.
func (c *Client) creating(ctx context.Context, f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gap > 0 && !c.lastCC.IsZero() {
		if wait := c.gap - time.Since(c.lastCC); wait > 0 {
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	err := f()
	c.lastCC = time.Now()
	return err
}

// Repo is what delivery needs to know about a repository.
type Repo struct {
	Owner, Name   string
	DefaultBranch string
	CloneURL      string
	CanPush       bool
	Fork          bool
}

func toRepo(r *github.Repository) *Repo {
	return &Repo{
		Owner: r.GetOwner().GetLogin(), Name: r.GetName(), DefaultBranch: r.GetDefaultBranch(),
		CloneURL: r.GetCloneURL(), CanPush: r.GetPermissions().GetPush(), Fork: r.GetFork(),
	}
}

// Repo fetches a repository.
func (c *Client) Repo(ctx context.Context, owner, name string) (*Repo, error) {
	r, _, err := c.API.Repositories.Get(ctx, owner, name)
	if err != nil {
		return nil, fmt.Errorf("get repository %s/%s: %w", owner, name, err)
	}
	return toRepo(r), nil
}

// Fork forks owner/name into the authenticated account (or returns the
// existing fork) and waits until GitHub reports it.
func (c *Client) Fork(ctx context.Context, owner, name string) (*Repo, error) {
	var fork *github.Repository
	err := c.creating(ctx, func() error {
		r, _, err := c.API.Repositories.CreateFork(ctx, owner, name, &github.RepositoryCreateForkOptions{DefaultBranchOnly: true})
		var accepted *github.AcceptedError
		if errors.As(err, &accepted) {
			r = new(github.Repository)
			if jerr := json.Unmarshal(accepted.Raw, r); jerr != nil {
				return fmt.Errorf("fork accepted but unreadable: %w", jerr)
			}
			err = nil
		}
		fork = r
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fork %s/%s: %w", owner, name, err)
	}
	for i := 0; ; i++ {
		got, _, err := c.API.Repositories.Get(ctx, fork.GetOwner().GetLogin(), fork.GetName())
		if err == nil {
			return toRepo(got), nil
		}
		if i >= 10 {
			return nil, fmt.Errorf("fork %s/%s not ready: %w", owner, name, err)
		}
		if err := sleep(ctx, time.Duration(i+1)*500*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// ChangeSetMarker is the hidden line in a PR body that records which change
// set the PR proposes, so a PR closed by a human is not proposed again.
func ChangeSetMarker(id string) string { return "<!-- pallasify:change-set=" + id + " -->" }

// PRSpec is the pull request delivery wants to exist.
type PRSpec struct {
	Owner, Repo string // base repository
	Base        string // base branch
	HeadOwner   string // owner of the head branch's repository (a fork), "" = Owner
	Head        string // head branch name
	Title, Body string
	Draft       bool
	Labels      []string
	ChangeSet   string // change-set id; the marker is added to Body if missing
}

func (s PRSpec) headRef() string {
	o := s.HeadOwner
	if o == "" {
		o = s.Owner
	}
	return o + ":" + s.Head
}

// PR actions.
const (
	Created       = "created"
	Updated       = "updated"
	Unchanged     = "unchanged"
	ClosedByHuman = "closed-by-human"
	AlreadyMerged = "merged"
)

// PRResult is what EnsurePR (or FindClosed) did or found.
type PRResult struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	Action string `json:"action"`
	Draft  bool   `json:"draft"`
}

// FindClosed looks for a closed PR from the same head whose body carries the
// change-set marker: a human closed (or merged) exactly this change.
func (c *Client) FindClosed(ctx context.Context, spec PRSpec) (*PRResult, error) {
	if spec.ChangeSet == "" {
		return nil, nil
	}
	marker := ChangeSetMarker(spec.ChangeSet)
	prs, _, err := c.API.PullRequests.List(ctx, spec.Owner, spec.Repo, &github.PullRequestListOptions{
		State: "closed", Head: spec.headRef(), ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, fmt.Errorf("list closed pull requests: %w", err)
	}
	for _, pr := range prs {
		if !strings.Contains(pr.GetBody(), marker) {
			continue
		}
		act := ClosedByHuman
		if pr.MergedAt != nil {
			act = AlreadyMerged
		}
		return &PRResult{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Action: act, Draft: pr.GetDraft()}, nil
	}
	return nil, nil
}

func (c *Client) findOpen(ctx context.Context, spec PRSpec) (*github.PullRequest, error) {
	prs, _, err := c.API.PullRequests.List(ctx, spec.Owner, spec.Repo, &github.PullRequestListOptions{
		State: "open", Head: spec.headRef(), Base: spec.Base, ListOptions: github.ListOptions{PerPage: 10}})
	if err != nil {
		return nil, fmt.Errorf("list open pull requests: %w", err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == spec.Head || pr.GetHead().GetRef() == "" {
			return pr, nil
		}
	}
	return nil, nil
}

// FindOpen returns the open pull request for spec's head branch, or nil.
func (c *Client) FindOpen(ctx context.Context, spec PRSpec) (*PRResult, error) {
	pr, err := c.findOpen(ctx, spec)
	if err != nil || pr == nil {
		return nil, err
	}
	return &PRResult{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Action: Unchanged, Draft: pr.GetDraft()}, nil
}

// EnsurePR updates the open PR for spec's head branch or creates one (draft
// when spec.Draft), then adds missing labels. It never re-opens a closed PR.
func (c *Client) EnsurePR(ctx context.Context, spec PRSpec) (*PRResult, error) {
	if spec.ChangeSet != "" && !strings.Contains(spec.Body, ChangeSetMarker(spec.ChangeSet)) {
		spec.Body = strings.TrimRight(spec.Body, "\n") + "\n\n" + ChangeSetMarker(spec.ChangeSet) + "\n"
	}
	pr, err := c.findOpen(ctx, spec)
	if err != nil {
		return nil, err
	}
	res := &PRResult{}
	if pr == nil {
		err = c.creating(ctx, func() error {
			var err error
			pr, _, err = c.API.PullRequests.Create(ctx, spec.Owner, spec.Repo, &github.NewPullRequest{
				Title: github.Ptr(spec.Title), Head: github.Ptr(spec.headRef()), Base: github.Ptr(spec.Base),
				Body: github.Ptr(spec.Body), Draft: github.Ptr(spec.Draft), MaintainerCanModify: github.Ptr(true)})
			return err
		})
		if err != nil && alreadyExists(err) {
			// Created concurrently (or the list was stale): find it and update.
			if pr, err = c.findOpen(ctx, spec); err == nil && pr == nil {
				err = errors.New("GitHub says the pull request exists but lists none open")
			}
		} else if err == nil {
			res.Action = Created
		}
		if err != nil {
			return nil, fmt.Errorf("create pull request: %w", err)
		}
	}
	if res.Action == "" {
		res.Action = Unchanged
		if pr.GetTitle() != spec.Title || pr.GetBody() != spec.Body {
			err := c.creating(ctx, func() error {
				var err error
				pr, _, err = c.API.PullRequests.Edit(ctx, spec.Owner, spec.Repo, pr.GetNumber(),
					&github.PullRequest{Title: github.Ptr(spec.Title), Body: github.Ptr(spec.Body)})
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("update pull request #%d: %w", pr.GetNumber(), err)
			}
			res.Action = Updated
		}
	}
	res.Number, res.URL, res.Draft = pr.GetNumber(), pr.GetHTMLURL(), pr.GetDraft()
	have := map[string]bool{}
	for _, l := range pr.Labels {
		have[l.GetName()] = true
	}
	var missing []string
	for _, l := range spec.Labels {
		if !have[l] {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		err := c.creating(ctx, func() error {
			_, _, err := c.API.Issues.AddLabelsToIssue(ctx, spec.Owner, spec.Repo, res.Number, missing)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("label pull request #%d: %w", res.Number, err)
		}
	}
	return res, nil
}

func alreadyExists(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	if strings.Contains(er.Message, "already exists") {
		return true
	}
	for _, e := range er.Errors {
		if strings.Contains(e.Message, "already exists") {
			return true
		}
	}
	return false
}

// Comment posts a comment on an issue or pull request.
func (c *Client) Comment(ctx context.Context, owner, repo string, number int, body string) error {
	return c.creating(ctx, func() error {
		_, _, err := c.API.Issues.CreateComment(ctx, owner, repo, number, &github.IssueComment{Body: github.Ptr(body)})
		if err != nil {
			return fmt.Errorf("comment on #%d: %w", number, err)
		}
		return nil
	})
}

// CreateIssue opens an issue and returns its number.
func (c *Client) CreateIssue(ctx context.Context, owner, repo, title, body string) (int, error) {
	var n int
	err := c.creating(ctx, func() error {
		is, _, err := c.API.Issues.Create(ctx, owner, repo, &github.IssueRequest{Title: github.Ptr(title), Body: github.Ptr(body)})
		if err != nil {
			return fmt.Errorf("create issue: %w", err)
		}
		n = is.GetNumber()
		return nil
	})
	return n, err
}

// Permission returns user's permission on the repository: admin, maintain,
// write, triage, read or none.
func (c *Client) Permission(ctx context.Context, owner, repo, user string) (string, error) {
	p, _, err := c.API.Repositories.GetPermissionLevel(ctx, owner, repo, user)
	if err != nil {
		return "", fmt.Errorf("permission of %s: %w", user, err)
	}
	if rn := p.GetRoleName(); rn == "maintain" {
		return rn, nil
	}
	return p.GetPermission(), nil
}

// CanWrite reports whether a permission level allows running commands.
func CanWrite(perm string) bool {
	switch perm {
	case "admin", "maintain", "write":
		return true
	}
	return false
}

// rateLimitTransport waits out rate limits and retries: 403/429 with
// Retry-After (secondary limits), or x-ratelimit-remaining: 0 with a reset
// time (primary limits).
type rateLimitTransport struct {
	base    http.RoundTripper
	maxWait time.Duration
	log     *slog.Logger
	timeout time.Duration // one attempt, body included
}

// cancelBody ends an attempt's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// attempt sends req once under t.timeout; the deadline holds until the
// response's body is closed.
func (t *rateLimitTransport) attempt(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeoutCause(req.Context(), t.timeout,
		fmt.Errorf("github: no answer from %s within %s", req.URL.Host, t.timeout))
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if req.Context().Err() == nil && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	resp.Body = cancelBody{resp.Body, cancel}
	return resp, nil
}

func (t *rateLimitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := t.attempt(req)
		if err != nil || attempt >= 4 {
			return resp, err
		}
		wait, ok := retryWait(resp, time.Now())
		if !ok || wait > t.maxWait {
			return resp, nil
		}
		if req.Body != nil && req.GetBody == nil {
			return resp, nil // cannot replay the body
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		t.log.LogAttrs(req.Context(), slog.LevelWarn, "github rate limit: waiting",
			slog.Int("status", resp.StatusCode), slog.Duration("wait", wait), slog.String("path", req.URL.Path))
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

func retryWait(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(strings.TrimSpace(ra)); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if at, err := http.ParseTime(ra); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	if resp.Header.Get("X-Ratelimit-Remaining") == "0" {
		if s, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(s, 0).Sub(now)+time.Second, 0), true
		}
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
