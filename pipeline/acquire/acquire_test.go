package acquire

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
)

func TestIsRemoteAndOwnerRepo(t *testing.T) {
	cases := []struct {
		in          string
		remote      bool
		owner, repo string
	}{
		{"https://github.com/acme/train.git", true, "acme", "train"},
		{"git@github.com:acme/train.git", true, "acme", "train"},
		{"file:///srv/git/acme/train.git", true, "acme", "train"},
		{"./some/dir", false, "some", "dir"},
		{"/abs/path", false, "abs", "path"},
		{"http://127.0.0.1:4000/o/r", true, "o", "r"},
	}
	for _, c := range cases {
		if got := IsRemote(c.in); got != c.remote {
			t.Errorf("IsRemote(%q) = %v", c.in, got)
		}
		o, r, ok := OwnerRepo(c.in)
		if !ok || o != c.owner || r != c.repo {
			t.Errorf("OwnerRepo(%q) = %q %q %v", c.in, o, r, ok)
		}
	}
	clean, tok := StripCredentials("https://x-access-token:ghs_secret123@github.com/o/r.git")
	if clean != "https://github.com/o/r.git" || tok != "ghs_secret123" {
		t.Errorf("StripCredentials = %q %q", clean, tok)
	}
}

func TestCloneFileRemote(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(1))
	want := gittest.Git(t, bare, "rev-parse", "main")
	ws := t.TempDir()
	src, err := Open(context.Background(), "file://"+bare, Options{Workspace: ws, Limiter: NewLimiter(1)})
	if err != nil {
		t.Fatal(err)
	}
	if src.Base != "main" || src.Head.String() != want || !src.Cloned || src.Prefix != "" {
		t.Errorf("source = %+v, want head %s", src, want)
	}
	if _, err := os.Stat(filepath.Join(src.Dir, "train.py")); err != nil {
		t.Error(err)
	}
	if n := gittest.Git(t, src.Dir, "rev-list", "--count", "HEAD"); n != "1" {
		t.Errorf("commits = %s", n)
	}
	if shallow, _ := os.ReadFile(filepath.Join(src.Dir, ".git", "shallow")); len(shallow) == 0 {
		// one commit: a depth-1 clone of a single-commit repo needs no shallow file
		t.Log("no shallow file (single-commit history)")
	}
	if err := src.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("workspace not cleaned: %v", entries)
	}

	src, err = Open(context.Background(), "file://"+bare, Options{Workspace: ws, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	src.Cleanup()
	if _, err := os.Stat(src.Dir); err != nil {
		t.Errorf("--keep clone removed: %v", err)
	}
}

func TestCloneHTTPBasicAuth(t *testing.T) {
	root := t.TempDir()
	gittest.NewRemote(t, root, "acme/train", gittest.Sources(2))
	const token = "ghs_acquireTestToken0123456789"
	srv := gittest.ServeHTTPSBackend(t, root, "x-access-token", token)
	url := srv.URL + "/acme/train.git"
	opts := func(tok string) Options {
		return Options{Workspace: t.TempDir(), Token: tok, TokenHosts: []string{srv.Host()}, CABundle: srv.CA}
	}

	src, err := Open(context.Background(), url, opts(token))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Cleanup()
	if src.Base != "main" || src.URL != url {
		t.Errorf("source = %+v", src)
	}

	_, err = Open(context.Background(), url, opts("ghs_wrongTokenWrongToken0000"))
	if err == nil {
		t.Fatal("wrong token cloned")
	}
	if strings.Contains(err.Error(), "wrongToken") {
		t.Errorf("error leaks token: %v", err)
	}

	// Credentials in an https URL are moved into auth and out of src.URL.
	withCreds := strings.Replace(url, "https://", "https://x-access-token:"+token+"@", 1)
	src2, err := Open(context.Background(), withCreds, Options{Workspace: t.TempDir(), CABundle: srv.CA})
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Cleanup()
	if strings.Contains(src2.URL, token) {
		t.Errorf("URL keeps token: %s", src2.URL)
	}
	cfg := gittest.Git(t, src2.Dir, "config", "--get", "remote.origin.url")
	if strings.Contains(cfg, token) {
		t.Errorf("token written to .git/config: %s", cfg)
	}
}

// A token goes only over HTTPS to the hosts it belongs to: a plain-http git
// server, or an https one not named, sees no credentials at all.
func TestTokenOnlyToItsHosts(t *testing.T) {
	root := t.TempDir()
	gittest.NewRemote(t, root, "acme/train", gittest.Sources(3))
	const token = "ghp_tokenScopeTest0123456789abcd"
	plain := gittest.ServeOpenHTTPBackend(t, root)
	tlsSrv := gittest.ServeHTTPSBackend(t, root, "x-access-token", token)

	// The token belongs to github.com (the default) and to the https
	// server's host, never to the plain-http one even when named.
	hosts := []string{"github.com", plain.Host()}
	src, err := Open(context.Background(), plain.URL+"/acme/train.git", Options{Workspace: t.TempDir(), Token: token, TokenHosts: hosts})
	if err != nil {
		t.Fatalf("anonymous clone of a public http repository: %v", err)
	}
	src.Cleanup()
	if plain.Seen(token) || len(plain.Passwords) > 0 {
		t.Fatalf("plain-http server received credentials:\n%s", strings.Join(plain.Raw, "\n"))
	}
	// An https host that is not named gets nothing either (and refuses).
	if _, err := Open(context.Background(), tlsSrv.URL+"/acme/train.git", Options{Workspace: t.TempDir(), Token: token, CABundle: tlsSrv.CA}); err == nil {
		t.Fatal("cloned an authenticated repository without sending the token")
	}
	if tlsSrv.Seen(token) {
		t.Fatal("token sent to an https host it does not belong to")
	}
	// Credentials typed into a plain-http URL are refused before any request.
	n := plain.Requests
	_, err = Open(context.Background(), strings.Replace(plain.URL, "http://", "http://u:"+token+"@", 1)+"/acme/train.git", Options{Workspace: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "clear text") || strings.Contains(err.Error(), token) {
		t.Fatalf("credentials in an http URL: %v", err)
	}
	if plain.Requests != n {
		t.Error("a request was made with credentials in a plain-http URL")
	}

	cases := []struct {
		url  string
		want bool
	}{
		{"https://github.com/acme/x.git", true},
		{"https://github.com:443/acme/x.git", true},
		{"http://github.com/acme/x.git", false},
		{"https://github.com.evil.example/acme/x.git", false},
		{"https://evil.example/github.com/x.git", false},
		{"ssh://git@github.com/acme/x.git", false},
		{"file:///srv/x.git", false},
	}
	c := Credentials{Token: token}
	for _, tc := range cases {
		if got := c.Allows(tc.url); got != tc.want {
			t.Errorf("Allows(%s) = %v; want %v", tc.url, got, tc.want)
		}
	}
	for url, want := range map[string]bool{"git@github.com:acme/x.git": true, "https://github.com/acme/x": true,
		"http://127.0.0.1:9/acme/x.git": false, "/local/checkout": false} {
		if got := c.IsGitHub(url); got != want {
			t.Errorf("IsGitHub(%s) = %v; want %v", url, got, want)
		}
	}
}

func TestLocalPathAndLimiter(t *testing.T) {
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "-b", "trunk")
	gittest.WriteTree(t, dir, map[string]string{"pkg/a.py": "x = 1\n"})
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "c")
	src, err := Open(context.Background(), filepath.Join(dir, "pkg"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if src.Base != "trunk" || src.Prefix != "pkg" || src.Cloned || src.Repo == nil {
		t.Errorf("local source = %+v", src)
	}
	plain := t.TempDir()
	if src, err := Open(context.Background(), plain, Options{}); err != nil || src.Repo != nil {
		t.Errorf("plain dir: %v %+v", err, src)
	}
	if _, err := Open(context.Background(), filepath.Join(plain, "missing"), Options{}); err == nil {
		t.Error("missing path accepted")
	}

	l := NewLimiter(1)
	if err := l.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.acquire(ctx); err == nil {
		t.Error("second clone slot granted on a limit of 1")
	}
	l.release()
}
