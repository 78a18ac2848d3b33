package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline/bot"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/gh"
	"github.com/pallasify/pallasify/pipeline/queue"
	"github.com/pallasify/pallasify/pipeline/redact"
	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/rule"
)

// botOptions are the bot command's flags and dependencies.
type botOptions struct {
	IO        *streams
	Addr      string
	Config    string
	AppID     int64
	Workspace string
	// Queue is the durable job queue (default: $PALLASIFY_QUEUE, else the
	// SQLite queue in the state directory).
	Queue string
	// Rules documents rule codes for /pallasify explain (nil: PIO codes only).
	Rules  func() []*rule.Rule
	Getenv func(string) string
	// Ready, when set, receives the listening address (tests).
	Ready func(addr string)
}

func newBotCmd(io *streams, rules func() []*rule.Rule) *cobra.Command {
	opts := &botOptions{IO: io, Rules: rules, Getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "bot",
		Short: "Run the pallasify GitHub App (webhook server)",
		Long: `Serve GitHub App webhooks on POST /webhook (and GET /healthz).

Events must carry a valid X-Hub-Signature-256 for the secret in
$PALLASIFY_WEBHOOK_SECRET (github.webhook_secret_env); redelivered events
are ignored. Collaborators with write access comment:

  /pallasify migrate        open or update the draft migration pull request
  /pallasify rebase         regenerate it from the base branch
  /pallasify explain CODE   explain a diagnostic code

Installing the App on a repository opens an issue previewing the changes
(no pull request). The App authenticates with github.app_id and the private
key in github.private_key_file or $<github.private_key_env>. Logs are JSON on
stderr and never contain tokens or secrets.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return botRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Addr, "addr", "", "listen address (default: bot.addr, :8080)")
	fl.StringVar(&opts.Config, "config", "", "operator config `FILE`")
	fl.Int64Var(&opts.AppID, "app-id", 0, "GitHub App id (default: github.app_id)")
	fl.StringVar(&opts.Workspace, "workspace", "", "directory for clones (default: the temp dir)")
	fl.StringVar(&opts.Queue, "queue", "", "durable job queue: PostgreSQL URL or SQLite file (default: $"+queueEnv+", else the SQLite queue in the state directory)")
	return cmd
}

func botRun(ctx context.Context, o *botOptions) error {
	cfg, probs, err := config.Load("", true, o.Config)
	for _, p := range probs {
		fmt.Fprintln(o.IO.ErrOut, p.String())
	}
	if err != nil {
		return usageErr(err)
	}
	secrets := &redact.Secrets{}
	secret := o.Getenv(cfg.GitHub.WebhookSecretEnv)
	if secret == "" {
		return usageErr(fmt.Errorf("no webhook secret: set $%s", cfg.GitHub.WebhookSecretEnv))
	}
	appID := o.AppID
	if appID == 0 {
		appID = cfg.GitHub.AppID
	}
	if appID == 0 {
		return usageErr(errors.New("no GitHub App id: --app-id or github.app_id"))
	}
	key, err := appKey(cfg, o.Getenv)
	if err != nil {
		return usageErr(err)
	}
	secrets.Add(secret, string(key))
	log := secrets.JSONLogger(o.IO.ErrOut, nil)
	// Accepted jobs go to the durable queue first, so a restart loses
	// nothing; this process works the bot queue with bot.workers.
	bw := &queue.BotWorker{JobTimeout: cfg.Bot.JobTimeout}
	jobTimeout := cfg.Bot.JobTimeout + queue.DefaultGrace
	q, err := queue.Open(ctx, queue.Config{URL: queueURL(o.Queue, o.Getenv, queue.DefaultURL()), BotWorkers: cfg.Bot.Workers, Bot: bw,
		JobTimeout: jobTimeout, RescueAfter: jobTimeout + 5*time.Minute, PollInterval: 500 * time.Millisecond, Logger: log})
	if err != nil {
		return usageErr(errors.New(secrets.String(err.Error())))
	}
	defer q.Close()
	srv, err := bot.New(bot.Options{
		Jobs:          queue.BotQueue{Q: q},
		Secret:        []byte(secret),
		Installations: bot.AppInstallations(appID, key, gh.Options{APIURL: cfg.GitHub.APIURL, Logger: log}),
		ConfigPath:    o.Config, Workers: cfg.Bot.Workers, Queue: cfg.Bot.Queue, JobTimeout: cfg.Bot.JobTimeout,
		Workspace: o.Workspace, TokenHosts: cfg.GitHub.TokenHosts(), Version: version, Log: o.IO.ErrOut, Secrets: secrets, Explain: explainer(o.Rules),
	})
	if err != nil {
		return usageErr(err)
	}
	addr := o.Addr
	if addr == "" {
		addr = cfg.Bot.Addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr(err)
	}
	bw.Server = srv
	if err := q.Start(context.WithoutCancel(ctx)); err != nil {
		return usageErr(err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("bot listening", "addr", ln.Addr().String(), "app_id", appID, "workers", cfg.Bot.Workers, "queue", q.String())
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return usageErr(err)
	case <-ctx.Done():
	}
	log.Info("bot shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("jobs still running at shutdown", "err", err)
	}
	// Running jobs get until sctx to finish; the rest stay queued (a job
	// cut short is retried by the next bot after its timeout).
	if err := q.Stop(sctx, false); err != nil {
		log.Warn("jobs still running at shutdown: retried after a restart", "err", err)
	}
	return nil
}

// explainer documents every code of the registry (transforms/codes): a
// rule's page from rules (the registry's rules when nil), any other code's doc.
func explainer(rules func() []*rule.Rule) func(string) (string, bool) {
	return func(code string) (string, bool) {
		e, ok := codes.Lookup(code)
		if !ok {
			return "", false
		}
		if e.Rule && rules != nil {
			for _, r := range rules() {
				if strings.EqualFold(r.Code, e.Code.Code) {
					return fmt.Sprintf("**%s** (`%s`, fix safety: %s)\n\n%s", r.Title(), r.Name, r.Safety, r.Doc), true
				}
			}
		}
		return fmt.Sprintf("**%s** (`%s`, %s, %s)\n\n%s", e.Title, e.Name, e.About, e.Severity, e.Doc), true
	}
}
