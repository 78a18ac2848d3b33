package bot_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/bot"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/gh"
	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
)

const secret = "webhook-secret-value-42"

type env struct {
	t      *testing.T
	api    *ghtest.Server
	git    *gittest.HTTPServer
	bare   string
	srv    *bot.Server
	http   *httptest.Server
	logs   *syncBuffer
	runs   *int
	mu     sync.Mutex
	cancel context.CancelFunc
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newEnv(t *testing.T, mods ...func(*bot.Options)) *env {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	e := &env{t: t, logs: &syncBuffer{}, runs: new(int)}
	e.api = ghtest.New(t)
	e.api.AppKey, e.api.AppID = &key.PublicKey, 99
	root := t.TempDir()
	e.bare = gittest.NewRemote(t, root, "acme/train", gittest.Sources(1))
	// git over HTTPS accepts only installation tokens the fake API minted.
	e.git = gittest.ServeHTTPSBackendFunc(t, root, func(u, p string) bool {
		return u == "x-access-token" && slices.Contains(e.api.MintedTokens(), p)
	})
	e.api.AddRepo(ghtest.Repo{Owner: "acme", Name: "train", CanPush: true, CloneURL: e.git.URL + "/acme/train.git"})
	e.api.SetPermission("acme", "train", "alice", "write")
	e.api.SetPermission("acme", "train", "bob", "read")
	migrate := func(ctx context.Context, root string, cfg *config.Config) (*pipeline.Run, error) {
		e.mu.Lock()
		*e.runs++
		e.mu.Unlock()
		return gittest.Migrate(ctx, root)
	}
	bo := bot.Options{
		Secret:        []byte(secret),
		Installations: bot.AppInstallations(99, pemKey, gh.Options{APIURL: e.api.URL, MinGap: -1}),
		Migrate:       migrate, Workers: 2, Queue: 8, JobTimeout: 30 * time.Second,
		Workspace: t.TempDir(), Version: "test", Log: e.logs, TokenHosts: []string{e.git.Host()}, CABundle: e.git.CA,
		Explain: func(code string) (string, bool) {
			if code == "PDV001" {
				return "Rewrites CUDA device strings.", true
			}
			return "", false
		},
	}
	for _, m := range mods {
		m(&bo)
	}
	e.srv, err = bot.New(bo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.srv.Start(ctx)
	e.http = httptest.NewServer(e.srv.Handler())
	t.Cleanup(func() {
		e.http.Close()
		e.srv.Shutdown(context.Background())
		cancel()
	})
	return e
}

func sign(body []byte, key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (e *env) post(event, delivery string, payload any, sig func([]byte) string) int {
	e.t.Helper()
	body, _ := json.Marshal(payload)
	req, _ := http.NewRequest("POST", e.http.URL+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	if sig != nil {
		req.Header.Set("X-Hub-Signature-256", sig(body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func good(b []byte) string { return sign(b, secret) }

func (e *env) comment(user, body string) map[string]any {
	return map[string]any{
		"action":       "created",
		"issue":        map[string]any{"number": 3},
		"comment":      map[string]any{"body": body, "user": map[string]any{"login": user}},
		"sender":       map[string]any{"login": user, "type": "User"},
		"installation": map[string]any{"id": 7},
		"repository": map[string]any{"name": "train", "full_name": "acme/train", "owner": map[string]any{"login": "acme"},
			"clone_url": e.git.URL + "/acme/train.git", "default_branch": "main"},
	}
}

func TestBotMigrateCommand(t *testing.T) {
	e := newEnv(t)
	if code := e.post("issue_comment", "d-1", e.comment("alice", "Let's try it.\n/pallasify migrate"), good); code != http.StatusAccepted {
		t.Fatalf("status %d", code)
	}
	// GitHub redelivers the same event: one job only.
	if code := e.post("issue_comment", "d-1", e.comment("alice", "Let's try it.\n/pallasify migrate"), good); code != http.StatusOK {
		t.Fatalf("duplicate status %d", code)
	}
	e.srv.Wait()
	prs := e.api.PRs()
	if len(prs) != 1 || prs[0].Head != "pallasify/tpu-migration" || !prs[0].Draft || *e.runs != 1 {
		t.Fatalf("prs %+v, runs %d\nlogs:\n%s", prs, *e.runs, e.logs.String())
	}
	if e.api.Count("POST", "/pulls") != 1 {
		t.Errorf("creates %d", e.api.Count("POST", "/pulls"))
	}
	gittest.Git(t, e.bare, "rev-parse", "--verify", "pallasify/tpu-migration")
	cs := e.api.Comments()
	if len(cs) != 1 || cs[0].Number != 3 || !strings.Contains(cs[0].Body, "created #1") {
		t.Fatalf("comments %+v", cs)
	}
	// The installation token was minted for app 99 and used for the API.
	if len(e.api.MintedTokens()) == 0 {
		t.Fatal("no installation token minted")
	}
	for _, r := range e.api.Requests() {
		if strings.HasPrefix(r.Path, "/repos/") && r.Auth != "token "+e.api.MintedTokens()[0] && r.Auth != "Bearer "+e.api.MintedTokens()[0] {
			t.Errorf("%s %s auth %q", r.Method, r.Path, r.Auth)
		}
	}
	// /pallasify rebase updates the same PR.
	e.post("issue_comment", "d-2", e.comment("alice", "/pallasify rebase"), good)
	e.srv.Wait()
	if len(e.api.PRs()) != 1 || e.api.Count("POST", "/pulls") != 1 {
		t.Errorf("rebase duplicated the PR: %+v", e.api.PRs())
	}
	noSecrets(t, e)
}

func TestBotRefusals(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		sig  func([]byte) string
		want int
	}{
		{"no signature", nil, http.StatusUnauthorized},
		{"wrong secret", func(b []byte) string { return sign(b, "not-the-secret") }, http.StatusUnauthorized},
		{"garbage", func([]byte) string { return "sha256=zz" }, http.StatusUnauthorized},
		{"sha1 only", func([]byte) string { return "" }, http.StatusUnauthorized},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := e.post("issue_comment", "bad-"+string(rune('a'+i)), e.comment("alice", "/pallasify migrate"), c.sig); got != c.want {
				t.Fatalf("status %d, want %d", got, c.want)
			}
		})
	}
	e.srv.Wait()
	if *e.runs != 0 || len(e.api.Requests()) != 0 {
		t.Fatalf("a refused webhook did work: runs %d, api requests %d", *e.runs, len(e.api.Requests()))
	}
	// A rejected delivery id can still arrive later with a good signature.
	if got := e.post("issue_comment", "bad-a", e.comment("bob", "/pallasify migrate"), good); got != http.StatusAccepted {
		t.Fatalf("status %d", got)
	}
	// bob has read access only: refused politely, nothing runs.
	e.srv.Wait()
	cs := e.api.Comments()
	if *e.runs != 0 || len(e.api.PRs()) != 0 || len(cs) != 1 || !strings.Contains(cs[0].Body, "@bob") || !strings.Contains(cs[0].Body, "write access") {
		t.Fatalf("runs %d prs %d comments %+v", *e.runs, len(e.api.PRs()), cs)
	}
	// Comments without a command, and from bots, are ignored.
	e.post("issue_comment", "c-1", e.comment("alice", "looks good"), good)
	botc := e.comment("pallasify[bot]", "/pallasify migrate")
	botc["sender"] = map[string]any{"login": "pallasify[bot]", "type": "Bot"}
	e.post("issue_comment", "c-2", botc, good)
	e.srv.Wait()
	if len(e.api.Comments()) != 1 {
		t.Errorf("ignored comments produced replies: %+v", e.api.Comments())
	}
	noSecrets(t, e)
}

func TestBotExplainOnboardHealth(t *testing.T) {
	e := newEnv(t)
	e.post("issue_comment", "x-1", e.comment("alice", "/pallasify explain pdv001"), good)
	e.post("issue_comment", "x-2", e.comment("alice", "/pallasify explain PZZ999"), good)
	e.post("issue_comment", "x-3", e.comment("alice", "/pallasify frobnicate"), good)
	install := map[string]any{"action": "created", "installation": map[string]any{"id": 7},
		"sender": map[string]any{"login": "alice", "type": "User"}, "repositories": []map[string]any{{"name": "train", "full_name": "acme/train"}}}
	if code := e.post("installation", "i-1", install, good); code != http.StatusAccepted {
		t.Fatalf("installation status %d", code)
	}
	e.srv.Wait()
	bodies := ""
	for _, c := range e.api.Comments() {
		bodies += c.Body + "\n---\n"
	}
	for _, w := range []string{"Rewrites CUDA device strings.", "no diagnostic `PZZ999`", "Unknown command `frobnicate`"} {
		if !strings.Contains(bodies, w) {
			t.Errorf("comments lack %q:\n%s", w, bodies)
		}
	}
	is := e.api.Issues()
	if len(is) != 1 || !strings.Contains(is[0].Body, "TPU migration preview") || !strings.Contains(is[0].Body, "pallasify migrate report") {
		t.Fatalf("onboarding issues %+v", is)
	}
	if len(e.api.PRs()) != 0 {
		t.Error("onboarding opened a PR")
	}
	if _, err := gittest.GitErr(e.bare, "rev-parse", "--verify", "pallasify/tpu-migration"); err == nil {
		t.Error("onboarding pushed a branch")
	}
	resp, err := http.Get(e.http.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz %v %v", resp, err)
	}
	resp.Body.Close()
	noSecrets(t, e)
}

// noSecrets greps the bot's logs and everything it posted for the webhook
// secret and the installation tokens.
func noSecrets(t *testing.T, e *env) {
	t.Helper()
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":`) {
		t.Errorf("no JSON logs:\n%s", logs)
	}
	secrets := append([]string{secret}, e.api.MintedTokens()...)
	var posted strings.Builder
	for _, c := range e.api.Comments() {
		posted.WriteString(c.Body)
	}
	for _, i := range e.api.Issues() {
		posted.WriteString(i.Body)
	}
	for _, p := range e.api.PRs() {
		posted.WriteString(p.Body)
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("secret %q in logs", s[:8])
		}
		if strings.Contains(posted.String(), s) {
			t.Errorf("secret %q posted to GitHub", s[:8])
		}
	}
}

func TestBotQueueFullAndJobTimeout(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, func(o *bot.Options) {
		inner := o.Migrate
		o.Workers, o.Queue, o.JobTimeout = 1, 1, 2*time.Second
		o.Migrate = func(ctx context.Context, root string, cfg *config.Config) (*pipeline.Run, error) {
			select {
			case <-release: // the first job waits here until released
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return inner(ctx, root, cfg)
		}
	})
	codes := []int{}
	for i, id := range []string{"q-1", "q-2", "q-3"} {
		codes = append(codes, e.post("issue_comment", id, e.comment("alice", "/pallasify migrate"), good))
		if i == 0 {
			// let the worker pick the first job up before queueing more
			deadline := time.Now().Add(10 * time.Second)
			for len(e.api.MintedTokens()) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	if codes[0] != 202 || codes[1] != 202 || codes[2] != http.StatusServiceUnavailable {
		t.Fatalf("statuses %v (want 202, 202, 503)", codes)
	}
	// The busy delivery was forgotten, so GitHub's redelivery gets through later.
	e.srv.Wait() // the first job hits its timeout; the second too (release never closed)
	cs := e.api.Comments()
	if len(cs) != 2 || !strings.Contains(cs[0].Body, "could not finish") || !strings.Contains(cs[0].Body, "deadline exceeded") {
		t.Fatalf("comments %+v", cs)
	}
	close(release)
	if code := e.post("issue_comment", "q-3", e.comment("alice", "/pallasify migrate"), good); code != 202 {
		t.Fatalf("redelivery status %d", code)
	}
	e.srv.Wait()
	if len(e.api.PRs()) != 1 {
		t.Fatalf("prs %+v", e.api.PRs())
	}
	noSecrets(t, e)
}
