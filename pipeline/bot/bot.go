// Package bot is pallasify's GitHub App: an HTTP server that verifies webhook
// signatures (X-Hub-Signature-256), drops redelivered events, and runs jobs
// on a bounded worker pool with per-job timeouts. Collaborators with write
// access drive it from issue and pull request comments (/pallasify migrate,
// /pallasify rebase, /pallasify explain CODE); installing the App on a
// repository opens an issue previewing what would change (no pull request).
// It authenticates as the installation and logs JSON that never holds a
// token or secret.
package bot

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v88/github"

	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver"
	"github.com/pallasify/pallasify/pipeline/gh"
	"github.com/pallasify/pallasify/pipeline/redact"
)

// Installation is how the bot acts for one App installation.
type Installation struct {
	Client *gh.Client
	// Token returns a current installation token (for git over HTTPS).
	Token func(ctx context.Context) (string, error)
}

// Installations returns the Installation for an installation id.
type Installations func(ctx context.Context, id int64) (*Installation, error)

// AppInstallations authenticates as GitHub App appID with its private key
// (ghinstallation), one cached transport per installation. base supplies the
// API URL, base transport, logger and pacing of the clients.
func AppInstallations(appID int64, privateKeyPEM []byte, base gh.Options) Installations {
	var mu sync.Mutex
	cache := map[int64]*Installation{}
	return func(ctx context.Context, id int64) (*Installation, error) {
		mu.Lock()
		defer mu.Unlock()
		if in, ok := cache[id]; ok {
			return in, nil
		}
		itr, err := gh.AppTransport(base.Transport, base.APIURL, appID, id, privateKeyPEM)
		if err != nil {
			return nil, err
		}
		opts := base
		opts.Transport, opts.Token = itr, ""
		c, err := gh.New(opts)
		if err != nil {
			return nil, err
		}
		in := &Installation{Client: c, Token: itr.Token}
		cache[id] = in
		return in, nil
	}
}

// Options configure the server.
type Options struct {
	// Secret is the webhook secret (required).
	Secret []byte
	// Installations authenticates as an installation (required).
	Installations Installations
	// Migrate runs the pipeline (default batch.PipelineMigrator(Version)).
	Migrate batch.Migrator
	// ConfigPath is the operator's config; each repository's pallasify.yaml
	// is merged under it, untrusted.
	ConfigPath string
	// Workers and Queue bound the in-memory job pool; JobTimeout bounds one job.
	Workers, Queue int
	// Jobs, when set, keeps accepted jobs durably instead (its workers run
	// them with RunJob; Start runs no pool then).
	Jobs       JobQueue
	JobTimeout time.Duration
	// Workspace is where clones go (default: the temp dir).
	Workspace string
	// TokenHosts are the hosts installation tokens may be sent to, over
	// HTTPS only (default: github.com; config.GitHubConfig.TokenHosts).
	TokenHosts []string
	// CABundle is extra PEM certificates trusted for git over HTTPS (a
	// GitHub Enterprise with a private CA; tests).
	CABundle []byte
	Version  string
	// Log is where JSON logs go (default: discard).
	Log io.Writer
	// Secrets are masked in logs and comments (Secret and every
	// installation token are added).
	Secrets *redact.Secrets
	// Explain returns the documentation of a diagnostic code.
	Explain func(code string) (string, bool)
	// MaxDeliveries is how many delivery ids are remembered (default 10000).
	MaxDeliveries int
}

// Server is the bot.
type Server struct {
	opts    Options
	log     *slog.Logger
	jobs    chan job
	pending sync.WaitGroup
	workers sync.WaitGroup
	mu      sync.Mutex
	seen    map[string]bool
	order   []string
	closed  bool
	bodies  *budget // webhook bodies being read, unauthenticated
}

type job struct {
	kind     string // command, onboard
	delivery string
	inst     int64
	owner    string
	repo     string
	cloneURL string
	base     string // default branch
	number   int    // issue or PR
	user     string
	command  string
	arg      string
}

// New builds a server; call Start to run workers.
func New(opts Options) (*Server, error) {
	if len(opts.Secret) == 0 {
		return nil, errors.New("bot: no webhook secret")
	}
	if opts.Installations == nil {
		return nil, errors.New("bot: no GitHub App credentials")
	}
	if opts.Secrets == nil {
		opts.Secrets = &redact.Secrets{}
	}
	opts.Secrets.Add(string(opts.Secret))
	if opts.Migrate == nil {
		opts.Migrate = batch.PipelineMigrator(opts.Version)
	}
	def := config.Defaults().Bot
	if opts.Workers < 1 {
		opts.Workers = def.Workers
	}
	if opts.Queue < 1 {
		opts.Queue = def.Queue
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = def.JobTimeout
	}
	if opts.MaxDeliveries < 1 {
		opts.MaxDeliveries = 10000
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &Server{opts: opts, log: opts.Secrets.JSONLogger(opts.Log, slog.LevelInfo),
		jobs: make(chan job, opts.Queue), seen: map[string]bool{}, bodies: newBudget(bodyBudget)}, nil
}

// Start runs the workers until Shutdown; jobs get a context derived from ctx.
func (s *Server) Start(ctx context.Context) {
	if s.opts.Jobs != nil {
		return
	}
	for i := 0; i < s.opts.Workers; i++ {
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			for j := range s.jobs {
				s.run(ctx, j)
			}
		}()
	}
}

// Wait blocks until every accepted job has finished.
func (s *Server) Wait() { s.pending.Wait() }

// Shutdown stops accepting jobs and waits for the running ones (or ctx).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.jobs)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.workers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handler serves POST /webhook and GET /healthz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","queued":%d}`+"\n", len(s.jobs))
	})
	mux.HandleFunc("POST /webhook", s.webhook)
	return mux
}

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"status\":%q}\n", msg)
}

// Limits on webhook bodies, which are read before anyone knows who sent
// them.
const (
	// maxPayload is GitHub's cap on a webhook payload (25 MB); a body
	// declared larger is refused unread (413).
	maxPayload = 25 << 20
	// bodyBudget bounds the bytes of the bodies being read (and held) at
	// once; a request that cannot get its declared length (maxPayload when
	// undeclared) within bodyWait is refused busy (503), unread.
	bodyBudget = 64 << 20
	bodyWait   = 2 * time.Second
)

// budget is a pool of bytes: acquire waits until n fit, release frees them.
// Unlike a FIFO semaphore, a small request is never queued behind a large
// one that does not fit yet.
type budget struct {
	mu    sync.Mutex
	used  int64
	max   int64
	freed chan struct{}
}

func newBudget(max int64) *budget { return &budget{max: max, freed: make(chan struct{})} }

func (b *budget) acquire(ctx context.Context, n int64, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
	}
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

// parseSignature decodes an X-Hub-Signature-256 value, "sha256=" and 64
// hex digits.
func parseSignature(v string) ([]byte, bool) {
	h, ok := strings.CutPrefix(v, "sha256=")
	if !ok || len(h) != 2*sha256.Size {
		return nil, false
	}
	mac, err := hex.DecodeString(h)
	return mac, err == nil
}

// readSigned reads body (size bytes when known, else -1) and computes its
// HMAC-SHA256 under secret as it reads.
func readSigned(body io.Reader, size int64, secret []byte) (data, mac []byte, err error) {
	m := hmac.New(sha256.New, secret)
	if size < 0 {
		size = 64 << 10
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := io.Copy(io.MultiWriter(buf, m), body); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), m.Sum(nil), nil
}

// webhookPayload is the event JSON of a signed body: the body itself, or
// its payload field when GitHub posts it as a form.
func webhookPayload(contentType string, body []byte) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = contentType
	}
	switch mt {
	case "application/json":
		return body, nil
	case "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, err
		}
		return []byte(form.Get("payload")), nil
	}
	return nil, fmt.Errorf("unsupported Content-Type %q", contentType)
}

// webhook checks everything it can before reading the body (a well-formed
// signature header, a delivery id, the declared length), reads the body
// only within the byte budget, and checks the signature, computed while
// reading, before parsing anything.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	delivery := r.Header.Get("X-GitHub-Delivery")
	event := github.WebHookType(r)
	log := s.log.With("delivery", delivery, "event", event)
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if sig == "" {
		log.Warn("webhook refused: no X-Hub-Signature-256")
		reply(w, http.StatusUnauthorized, "missing signature")
		return
	}
	want, ok := parseSignature(sig)
	if !ok {
		log.Warn("webhook refused: malformed X-Hub-Signature-256")
		reply(w, http.StatusUnauthorized, "bad signature")
		return
	}
	if delivery == "" {
		reply(w, http.StatusBadRequest, "missing X-GitHub-Delivery")
		return
	}
	if r.ContentLength > maxPayload {
		log.Warn("webhook refused: body over the payload cap", "bytes", r.ContentLength)
		reply(w, http.StatusRequestEntityTooLarge, "payload too large")
		return
	}
	n := r.ContentLength
	if n < 0 {
		n = maxPayload
	}
	if !s.bodies.acquire(r.Context(), n, bodyWait) {
		log.Warn("webhook refused: too many bodies being read", "bytes", n)
		w.Header().Set("Retry-After", "1")
		reply(w, http.StatusServiceUnavailable, "busy")
		return
	}
	defer s.bodies.release(n)
	body, mac, err := readSigned(http.MaxBytesReader(w, r.Body, maxPayload), r.ContentLength, s.opts.Secret)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply(w, http.StatusRequestEntityTooLarge, "payload too large")
			return
		}
		log.Warn("webhook refused: unreadable body", "err", err)
		reply(w, http.StatusBadRequest, "unreadable body")
		return
	}
	if !hmac.Equal(mac, want) {
		log.Warn("webhook refused: bad signature")
		reply(w, http.StatusUnauthorized, "bad signature")
		return
	}
	payload, err := webhookPayload(r.Header.Get("Content-Type"), body)
	if err != nil {
		log.Info("webhook ignored", "err", err)
		reply(w, http.StatusBadRequest, "unreadable payload")
		return
	}
	if !s.firstDelivery(delivery) {
		log.Info("webhook duplicate delivery ignored")
		reply(w, http.StatusOK, "duplicate")
		return
	}
	ev, err := github.ParseWebHook(event, payload)
	if err != nil {
		log.Info("webhook ignored", "err", err)
		reply(w, http.StatusAccepted, "ignored")
		return
	}
	jobs := s.jobsFor(ev, delivery)
	if len(jobs) == 0 {
		reply(w, http.StatusAccepted, "ignored")
		return
	}
	for _, j := range jobs {
		if !s.enqueue(j) {
			s.forget(delivery) // let GitHub's redelivery through
			log.Error("job queue full")
			reply(w, http.StatusServiceUnavailable, "busy")
			return
		}
	}
	log.Info("webhook accepted", "jobs", len(jobs))
	reply(w, http.StatusAccepted, "queued")
}

func (s *Server) firstDelivery(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[id] {
		return false
	}
	s.seen[id] = true
	s.order = append(s.order, id)
	if len(s.order) > s.opts.MaxDeliveries {
		delete(s.seen, s.order[0])
		s.order = s.order[1:]
	}
	return true
}

func (s *Server) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.seen, id)
}

func (s *Server) enqueue(j job) bool {
	if s.opts.Jobs != nil {
		return s.enqueueDurable(j)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.pending.Add(1)
	select {
	case s.jobs <- j:
		return true
	default:
		s.pending.Done()
		return false
	}
}

var commandRE = regexp.MustCompile(`(?m)^\s*/pallasify\s+([a-z-]+)(?:[ \t]+(\S+))?`)

func (s *Server) jobsFor(ev any, delivery string) []job {
	switch e := ev.(type) {
	case *github.IssueCommentEvent:
		if e.GetAction() != "created" || e.GetSender().GetType() == "Bot" {
			return nil
		}
		m := commandRE.FindStringSubmatch(e.GetComment().GetBody())
		if m == nil {
			return nil
		}
		r := e.GetRepo()
		return []job{{kind: "command", delivery: delivery, inst: e.GetInstallation().GetID(), owner: r.GetOwner().GetLogin(),
			repo: r.GetName(), cloneURL: r.GetCloneURL(), base: r.GetDefaultBranch(), number: e.GetIssue().GetNumber(),
			user: e.GetSender().GetLogin(), command: m[1], arg: m[2]}}
	case *github.InstallationEvent:
		if e.GetAction() != "created" {
			return nil
		}
		return s.onboardJobs(delivery, e.GetInstallation().GetID(), e.Repositories)
	case *github.InstallationRepositoriesEvent:
		if e.GetAction() != "added" {
			return nil
		}
		return s.onboardJobs(delivery, e.GetInstallation().GetID(), e.RepositoriesAdded)
	}
	return nil
}

func (s *Server) onboardJobs(delivery string, inst int64, repos []*github.Repository) []job {
	var out []job
	for _, r := range repos {
		owner, name, ok := strings.Cut(r.GetFullName(), "/")
		if !ok {
			continue
		}
		out = append(out, job{kind: "onboard", delivery: delivery, inst: inst, owner: owner, repo: name})
	}
	return out
}

func (s *Server) run(parent context.Context, j job) {
	defer s.pending.Done()
	ctx, cancel := context.WithTimeout(parent, s.opts.JobTimeout)
	defer cancel()
	log := s.log.With("delivery", j.delivery, "repo", j.owner+"/"+j.repo, "job", j.kind, "command", j.command)
	start := time.Now()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("job panicked: %v", r)
			}
		}()
		err = s.do(ctx, j, log)
	}()
	if err != nil {
		log.Error("job failed", "err", err, "seconds", time.Since(start).Seconds())
		return
	}
	log.Info("job done", "seconds", time.Since(start).Seconds())
}

func (s *Server) do(ctx context.Context, j job, log *slog.Logger) error {
	in, err := s.opts.Installations(ctx, j.inst)
	if err != nil {
		return err
	}
	c := in.Client
	if j.kind == "onboard" {
		return s.onboard(ctx, j, in, log)
	}
	perm, err := c.Permission(ctx, j.owner, j.repo, j.user)
	if err != nil {
		return err
	}
	if !gh.CanWrite(perm) {
		log.Info("command refused: no write access", "user", j.user, "permission", perm)
		return c.Comment(ctx, j.owner, j.repo, j.number, fmt.Sprintf(
			"Thanks for trying pallasify, @%s! Commands change branches and pull requests, so only people with write access "+
				"to this repository can run them. A maintainer can run `/pallasify %s` for you.", j.user, j.command))
	}
	switch j.command {
	case "explain":
		return c.Comment(ctx, j.owner, j.repo, j.number, s.explain(j.arg))
	case "migrate", "rebase":
		msg, err := s.migrate(ctx, j, in, log)
		if err != nil {
			msg = "pallasify could not finish: " + s.opts.Secrets.String(err.Error())
		}
		// Report even when the job ran out of time.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if cerr := c.Comment(cctx, j.owner, j.repo, j.number, msg); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	default:
		return c.Comment(ctx, j.owner, j.repo, j.number, fmt.Sprintf("Unknown command `%s`. %s", j.command, help))
	}
}

const help = "Commands: `/pallasify migrate` opens or updates the migration pull request, `/pallasify rebase` regenerates " +
	"it from the base branch, `/pallasify explain CODE` explains a diagnostic code."

func (s *Server) explain(code string) string {
	code = strings.ToUpper(strings.Trim(code, "`"))
	if code == "" {
		return "Usage: `/pallasify explain CODE`, for example `/pallasify explain PDV001`."
	}
	if s.opts.Explain != nil {
		if doc, ok := s.opts.Explain(code); ok {
			return fmt.Sprintf("### `%s`\n\n%s", code, doc)
		}
	}
	return fmt.Sprintf("pallasify has no diagnostic `%s`. Run `pallasify rules` for the list.", code)
}

// checkout clones the repository with the installation token.
func (s *Server) checkout(ctx context.Context, j job, in *Installation) (*acquire.Source, string, error) {
	tok, err := in.Token(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("installation token: %w", err)
	}
	s.opts.Secrets.Add(tok)
	url, base := j.cloneURL, j.base
	if url == "" {
		info, err := in.Client.Repo(ctx, j.owner, j.repo)
		if err != nil {
			return nil, "", err
		}
		url, base = info.CloneURL, info.DefaultBranch
	}
	src, err := acquire.Open(ctx, url, acquire.Options{Workspace: s.opts.Workspace, Token: tok, TokenHosts: s.opts.TokenHosts,
		CABundle: s.opts.CABundle, Branch: base})
	return src, tok, err
}

func (s *Server) migrate(ctx context.Context, j job, in *Installation, log *slog.Logger) (string, error) {
	src, _, err := s.checkout(ctx, j, in)
	if err != nil {
		return "", err
	}
	defer src.Cleanup()
	cfg, _, err := config.Load(src.Dir, false, s.opts.ConfigPath)
	if err != nil {
		return "", fmt.Errorf("pallasify.yaml: %w", err)
	}
	if j.command == "rebase" {
		open, err := in.Client.FindOpen(ctx, gh.PRSpec{Owner: j.owner, Repo: j.repo, Head: cfg.BranchName()})
		if err != nil {
			return "", err
		}
		if open == nil {
			return "There is no open pallasify pull request to rebase. Run `/pallasify migrate` to open one.", nil
		}
	}
	run, err := s.opts.Migrate(ctx, src.Dir, cfg)
	if err != nil {
		return "", err
	}
	res, err := deliver.Run(ctx, src, run, deliver.Options{Config: cfg, Version: s.opts.Version, PR: true,
		GitHub: in.Client, Owner: j.owner, Repo: j.repo, Logger: log,
		Reproduce: fmt.Sprintf("pallasify migrate https://github.com/%s/%s --target %s", j.owner, j.repo, cfg.Target)})
	if errors.Is(err, deliver.ErrForeignCommits) {
		return "pallasify stopped: " + err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case res.Status == deliver.StatusNoChanges:
		return "pallasify found nothing to change on `" + res.Base + "`.", nil
	case res.Status == deliver.StatusClosedByHuman:
		return fmt.Sprintf("#%d proposed this exact change and was closed, so pallasify will not open it again. "+
			"It will propose a new pull request when the change differs.", res.PR.Number), nil
	case res.PR != nil:
		return fmt.Sprintf("pallasify %s #%d (%d commits on `%s`).", res.PR.Action, res.PR.Number, len(res.Commits), res.Branch), nil
	}
	return res.Message, nil
}

// onboard previews the migration in an issue; it opens no pull request.
func (s *Server) onboard(ctx context.Context, j job, in *Installation, log *slog.Logger) error {
	src, _, err := s.checkout(ctx, j, in)
	if err != nil {
		return err
	}
	defer src.Cleanup()
	cfg, _, err := config.Load(src.Dir, false, s.opts.ConfigPath)
	if err != nil {
		return fmt.Errorf("pallasify.yaml: %w", err)
	}
	run, err := s.opts.Migrate(ctx, src.Dir, cfg)
	if err != nil {
		return err
	}
	md, err := deliver.RenderMarkdown(run)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("pallasify is installed. This is what it would change to move this repository to TPU; nothing was changed and no pull request was opened.\n\n")
	b.Write(md)
	b.WriteString("\nComment `/pallasify migrate` to open a draft pull request with these changes, or add a `pallasify.yaml` to configure them.\n")
	body := deliver.Truncate(s.opts.Secrets.String(b.String()), config.MaxPRBody)
	n, err := in.Client.CreateIssue(ctx, j.owner, j.repo, "pallasify: TPU migration preview", body)
	if err != nil {
		return err
	}
	log.Info("onboarding issue opened", "issue", n)
	return nil
}
