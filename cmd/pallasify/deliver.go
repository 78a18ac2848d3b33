package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver"
	"github.com/pallasify/pallasify/pipeline/gh"
	"github.com/pallasify/pallasify/pipeline/redact"
)

// deliveryFlags add git URLs, pallasify.yaml, --branch, --push and --pr to
// migrate. Use: bind in the command; open before the pipeline (it clones
// URLs and loads the config); applyConfig for flags the user left unset;
// deliver after the pipeline; close at the end.
type deliveryFlags struct {
	Branch, Push, PR, Keep bool
	Config                 string
	Workspace              string
	// CloneTimeout and CloneIdle bound the clone of a git URL (zero: the
	// acquire defaults; negative: none).
	CloneTimeout, CloneIdle time.Duration
	Getenv                  func(string) string

	// Set by open (zero after flag parsing, so options stay comparable).
	src     *acquire.Source
	cfg     *config.Config
	cfgFile string // the repository's config file read, as config.Describe names it ("" none)
	token   string
	client  *gh.Client
	secrets *redact.Secrets
}

func (d *deliveryFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&d.Branch, "branch", false, "commit the changes on the pallasify branch (one commit per rewrite family)")
	fl.BoolVar(&d.Push, "push", false, "push the pallasify branch (implies --branch)")
	fl.BoolVar(&d.PR, "pr", false, "open or update a draft pull request (implies --push)")
	fl.BoolVar(&d.Keep, "keep", false, "keep the clone of a git URL")
	fl.StringVar(&d.Config, "config", "", "config `FILE` merged over the repository's pallasify.yaml")
	fl.StringVar(&d.Workspace, "workspace", "", "directory for clones of git URLs (default: the temp dir)")
	fl.DurationVar(&d.CloneTimeout, "clone-timeout", 0, fmt.Sprintf("deadline for cloning a git URL (default %s; negative: none)", acquire.DefaultCloneTimeout))
	fl.DurationVar(&d.CloneIdle, "clone-idle-timeout", 0, fmt.Sprintf("fail a clone that receives and writes nothing for this long (default %s; negative: none)", acquire.DefaultIdleTimeout))
}

func (d *deliveryFlags) getenv(k string) string {
	if d.Getenv != nil {
		return d.Getenv(k)
	}
	return os.Getenv(k)
}

// delivering reports whether --branch, --push or --pr was given.
func (d *deliveryFlags) delivering() bool { return d.Branch || d.Push || d.PR }

// open resolves pathOrURL to a local root (cloning a git URL, depth 1) and
// loads the config: the repository's config file (for a local path the one
// config.Discover finds from it, trusted; for a URL the clone's root's,
// untrusted) merged with --config.
func (d *deliveryFlags) open(ctx context.Context, io *streams, pathOrURL string) (string, *config.Config, error) {
	d.secrets = &redact.Secrets{}
	remote := acquire.IsRemote(pathOrURL)
	if !remote && !d.delivering() {
		// A plain local run: no acquire step, just the config.
		cfg, file, err := loadLocalConfig(io, pathOrURL, d.Config)
		if err != nil {
			return "", nil, err
		}
		d.cfg, d.cfgFile = cfg, file
		return pathOrURL, cfg, nil
	}
	flagCfg, _, err := config.Load("", true, d.Config)
	if err != nil {
		return "", nil, usageErr(err)
	}
	if remote && d.Branch && !d.Push && !d.PR && !d.Keep {
		return "", nil, usageErr(errors.New("--branch on a git URL commits into a temporary clone: add --push, --pr or --keep"))
	}
	hosts := flagCfg.GitHub.TokenHosts()
	if d.PR {
		// Before any network call: a pull request needs a GitHub remote.
		if err := requireGitHub(pathOrURL, remote, hosts); err != nil {
			return "", nil, usageErr(err)
		}
	}
	tok, client, err := githubAuth(ctx, flagCfg, d.getenv, d.PR)
	if err != nil {
		return "", nil, usageErr(errors.New(d.secrets.String(err.Error())))
	}
	d.token, d.client = tok, client
	d.secrets.Add(d.token)
	src, err := acquire.Open(ctx, pathOrURL, acquire.Options{Workspace: d.Workspace, Keep: d.Keep, Token: d.token, TokenHosts: hosts,
		CloneTimeout: d.CloneTimeout, IdleTimeout: d.CloneIdle})
	if err != nil {
		return "", nil, usageErr(errors.New(d.secrets.String(err.Error())))
	}
	d.src = src
	if src.Cloned && d.Keep {
		fmt.Fprintf(io.ErrOut, "pallasify: clone kept at %s\n", src.Dir)
	}
	if !remote {
		cfg, file, err := loadLocalConfig(io, src.Dir, d.Config)
		if err != nil {
			return "", nil, err
		}
		d.cfg, d.cfgFile = cfg, file
		return src.Dir, cfg, nil
	}
	cfg, probs, err := config.Load(src.Dir, false, d.Config)
	for _, p := range probs {
		fmt.Fprintln(io.ErrOut, p.String())
	}
	if err != nil {
		return "", nil, usageErr(err)
	}
	d.cfg = cfg
	if f, _ := config.Find(src.Dir); f != "" {
		d.cfgFile = config.Describe(filepath.Base(f))
	}
	return src.Dir, cfg, nil
}

// applyConfig takes values from the config where the flag kept its default
// and was not given on the command line (explicit holds the names of the
// flags that were, as cobra's Flags().Changed reports them): an explicit flag
// always wins over the file, even when it repeats the default.
func (d *deliveryFlags) applyConfig(explicit map[string]bool, target *string, sel, ign, inc, exc *[]string, unsafe, mark *bool) {
	applyConfig(d.cfg, explicit, target, sel, ign, inc, exc, unsafe, mark)
}

// applyConfig is deliveryFlags.applyConfig with the config given (nil:
// nothing to apply).
func applyConfig(cfg *config.Config, explicit map[string]bool, target *string, sel, ign, inc, exc *[]string, unsafe, mark *bool) {
	if cfg == nil {
		return
	}
	if target != nil && !explicit["target"] && (*target == "" || *target == "portable") {
		*target = cfg.Target
	}
	for _, p := range []struct {
		name string
		flag *[]string
		cfg  []string
	}{{"select", sel, cfg.Select}, {"ignore", ign, cfg.Ignore}, {"include", inc, cfg.Include}, {"exclude", exc, cfg.Exclude}} {
		if p.flag != nil && !explicit[p.name] && len(*p.flag) == 0 {
			*p.flag = p.cfg
		}
	}
	if unsafe != nil && !explicit["unsafe-fixes"] && !*unsafe {
		*unsafe = cfg.UnsafeFixes
	}
	if mark != nil && !explicit["mark"] && !*mark {
		*mark = cfg.Mark
	}
}

// deliver commits, pushes and proposes run as asked; it prints one line.
func (d *deliveryFlags) deliver(ctx context.Context, io *streams, run *pipeline.Run, reproduce string) error {
	if !d.delivering() {
		return nil
	}
	opts := deliver.Options{Config: d.cfg, Version: version, Push: d.Push || d.PR, PR: d.PR, Reproduce: reproduce}
	if d.PR {
		if d.client == nil {
			return usageErr(fmt.Errorf("--pr needs a GitHub token in $%s (or GitHub App settings in --config)", d.cfg.GitHub.TokenEnv))
		}
		opts.GitHub = d.client
	}
	res, err := deliver.Run(ctx, d.src, run, opts)
	if err != nil {
		var fe *deliver.ForeignCommitError
		if errors.As(err, &fe) {
			return &exitError{code: 1, err: err}
		}
		return usageErr(errors.New(d.secrets.String(err.Error())))
	}
	msg := res.Message
	if res.PR != nil && res.PR.URL != "" {
		msg += ": " + res.PR.URL
	}
	fmt.Fprintln(io.ErrOut, "pallasify:", d.secrets.String(msg))
	return nil
}

// requireGitHub checks that --pr has a GitHub repository to open the pull
// request on: the URL itself, or the origin remote of a local checkout, must
// be on one of hosts.
func requireGitHub(pathOrURL string, remote bool, hosts []string) error {
	url := pathOrURL
	if !remote {
		url = acquire.RemoteURL(pathOrURL, "origin")
		if url == "" {
			return fmt.Errorf("--pr needs a GitHub remote: %s has no origin remote", pathOrURL)
		}
	}
	if !(acquire.Credentials{Hosts: hosts}).IsGitHub(url) {
		return fmt.Errorf("--pr needs a GitHub remote: %s is not on %s (name other GitHub hosts in github.api_url or github.hosts)",
			url, strings.Join(hosts, " or "))
	}
	return nil
}

// close removes a clone (unless --keep).
func (d *deliveryFlags) close() {
	if d.src != nil {
		d.src.Cleanup()
	}
}

// reproduceCmd is the dry-run command shown in pull requests.
func reproduceCmd(pathOrURL, target string) string {
	clean, _ := acquire.StripCredentials(pathOrURL)
	return fmt.Sprintf("pallasify migrate %s --target %s", clean, target)
}

// githubAuth returns the token for git over HTTPS and, when wantAPI, a
// GitHub client: the token in $<github.token_env>, else a GitHub App
// installation token (github.app_id, github.installation_id and the App's
// private key). An empty token with a nil error means no credentials.
func githubAuth(ctx context.Context, cfg *config.Config, getenv func(string) string, wantAPI bool) (string, *gh.Client, error) {
	if tok := getenv(cfg.GitHub.TokenEnv); tok != "" {
		if !wantAPI {
			return tok, nil, nil
		}
		c, err := gh.New(gh.Options{APIURL: cfg.GitHub.APIURL, Token: tok})
		return tok, c, err
	}
	if cfg.GitHub.AppID == 0 || cfg.GitHub.InstallationID == 0 {
		return "", nil, nil
	}
	key, err := appKey(cfg, getenv)
	if err != nil {
		return "", nil, err
	}
	itr, err := gh.AppTransport(nil, cfg.GitHub.APIURL, cfg.GitHub.AppID, cfg.GitHub.InstallationID, key)
	if err != nil {
		return "", nil, err
	}
	tok, err := itr.Token(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("GitHub App installation token: %w", err)
	}
	if !wantAPI {
		return tok, nil, nil
	}
	c, err := gh.New(gh.Options{APIURL: cfg.GitHub.APIURL, Transport: itr})
	return tok, c, err
}

// appKey reads the GitHub App's private key from $<github.private_key_env>
// or github.private_key_file.
func appKey(cfg *config.Config, getenv func(string) string) ([]byte, error) {
	if cfg.GitHub.PrivateKeyEnv != "" {
		if k := getenv(cfg.GitHub.PrivateKeyEnv); k != "" {
			return []byte(k), nil
		}
	}
	if cfg.GitHub.PrivateKeyFile != "" {
		k, err := os.ReadFile(cfg.GitHub.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("read the App's private key: %w", err)
		}
		return k, nil
	}
	return nil, errors.New("no GitHub App private key: set github.private_key_file or github.private_key_env")
}
