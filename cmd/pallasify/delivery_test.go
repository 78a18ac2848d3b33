package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
)

func deliveryStreams() (*streams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

func TestConfigValidateCmd(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pallasify.yaml")
	os.WriteFile(good, []byte("target: tpu\npr:\n  labels: [tpu]\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("target: tpu\nbranch:\n  prefixx: x\n"), 0o644)
	ops := filepath.Join(dir, "ops.yaml")
	os.WriteFile(ops, []byte("github:\n  token_env: BOT_TOKEN\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"config", "validate", good}, 0, "pallasify.yaml: ok"},
		{[]string{"config", "validate", bad}, 1, "bad.yaml:3: error: field prefixx not found"},
		{[]string{"config", "validate", ops}, 0, "ops.yaml:2: warning: github: ignored"},
		{[]string{"config", "validate", "--operator", ops}, 0, "ops.yaml: ok"},
		{[]string{"config", "validate", filepath.Join(dir, "missing.yaml")}, 2, ""},
		{[]string{"config", "show", good}, 0, "target: tpu"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) {
			io, out, _ := deliveryStreams()
			if code := run(c.args, io); code != c.code {
				t.Fatalf("exit %d, want %d; out:\n%s", code, c.code, out.String())
			}
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out.String())
			}
		})
	}
}

func TestBatchCmdResume(t *testing.T) {
	root := t.TempDir()
	var list strings.Builder
	for i := 1; i <= 3; i++ {
		bare := gittest.NewRemote(t, root, "acme/r"+string(rune('0'+i)), gittest.Sources(i))
		list.WriteString("file://" + bare + "\n")
	}
	list.WriteString("file://" + filepath.Join(root, "acme", "nope.git") + "\n")
	listPath := filepath.Join(t.TempDir(), "repos.txt")
	os.WriteFile(listPath, []byte(list.String()), 0o644)
	runDir := filepath.Join(t.TempDir(), "run")
	const token = "ghp_cmdBatchToken0123456789abcd"
	getenv := func(k string) string {
		if k == "GITHUB_TOKEN" {
			return token
		}
		return ""
	}
	io, out, errOut := deliveryStreams()
	opts := &batchOptions{IO: io, List: listPath, RunDir: runDir, Push: true, Migrate: func(ctx context.Context, root string, _ *config.Config) (*pipeline.Run, error) {
		return gittest.Migrate(ctx, root)
	}, Getenv: getenv}
	err := batchRun(context.Background(), opts)
	if exitCodeOf(err) != 1 || !strings.Contains(err.Error(), "1 of 4 repositories failed") {
		t.Fatalf("err %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "4 repositories: 3 done, 1 failed") || !strings.Contains(errOut.String(), `"msg":"repo done"`) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	gittest.Git(t, filepath.Join(root, "acme", "r2.git"), "rev-parse", "--verify", "pallasify/tpu-migration")
	io, out, errOut = deliveryStreams()
	opts.IO = io
	err = batchRun(context.Background(), opts)
	if exitCodeOf(err) != 1 || !strings.Contains(out.String(), "4 skipped as already handled") {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String()+errOut.String(), token) {
		t.Error("token in output")
	}
}

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exitError); ok {
		return ee.code
	}
	return 2
}

func TestBotCmdServes(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	ops := filepath.Join(t.TempDir(), "ops.yaml")
	os.WriteFile(ops, []byte("github:\n  app_id: 5\n  private_key_env: APP_KEY\n  api_url: http://127.0.0.1:1/\nbot:\n  workers: 1\n"), 0o644)
	env := map[string]string{"PALLASIFY_WEBHOOK_SECRET": "hook-secret-xyz", "APP_KEY": pemKey}
	io, _, errOut := deliveryStreams()
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- botRun(ctx, &botOptions{IO: io, Addr: "127.0.0.1:0", Config: ops, Getenv: func(k string) string { return env[k] },
			Ready: func(a string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("bot exited: %v", err)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post("http://"+addr+"/webhook", "application/json", strings.NewReader(`{}`))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned webhook: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logs := errOut.String()
	if !strings.Contains(logs, `"msg":"bot listening"`) || strings.Contains(logs, "hook-secret-xyz") || strings.Contains(logs, "PRIVATE KEY") {
		t.Errorf("logs:\n%s", logs)
	}
	// Missing secret: a usage error, not a server without authentication.
	io, _, _ = deliveryStreams()
	if err := botRun(context.Background(), &botOptions{IO: io, Config: ops, Getenv: func(string) string { return "" }}); exitCodeOf(err) != 2 {
		t.Errorf("no secret: %v", err)
	}
}

func TestGitHubAuth(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	api := ghtest.New(t, "ghp_patToken0123456789abcdefgh")
	api.AppKey, api.AppID = &key.PublicKey, 11
	api.SetPermission("o", "r", "u", "admin")
	cfg := config.Defaults()
	cfg.GitHub.APIURL, cfg.GitHub.AppID, cfg.GitHub.InstallationID, cfg.GitHub.PrivateKeyEnv = api.URL, 11, 22, "APP_KEY"
	env := map[string]string{"APP_KEY": pemKey}
	getenv := func(k string) string { return env[k] }

	tok, client, err := githubAuth(context.Background(), cfg, getenv, true)
	if err != nil || len(api.MintedTokens()) != 1 || tok != api.MintedTokens()[0] {
		t.Fatalf("app auth: %q %v %v", tok, err, api.MintedTokens())
	}
	if perm, err := client.Permission(context.Background(), "o", "r", "u"); err != nil || perm != "admin" {
		t.Fatalf("client: %q %v", perm, err)
	}
	env["GITHUB_TOKEN"] = "ghp_patToken0123456789abcdefgh"
	if tok, _, err := githubAuth(context.Background(), cfg, getenv, false); err != nil || tok != env["GITHUB_TOKEN"] {
		t.Fatalf("PAT wins: %q %v", tok, err)
	}
	delete(env, "GITHUB_TOKEN")
	delete(env, "APP_KEY")
	if _, _, err := githubAuth(context.Background(), cfg, getenv, true); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Fatalf("missing key: %v", err)
	}
	// --branch on a URL without --push/--keep would be thrown away: refused.
	io, _, errOut := deliveryStreams()
	if code := run([]string{"migrate", "--branch", "https://github.com/o/r.git"}, io); code != 2 || !strings.Contains(errOut.String(), "temporary clone") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}
