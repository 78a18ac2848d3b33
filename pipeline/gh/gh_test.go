package gh

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline/gh/ghtest"
)

const testToken = "ghp_ghTestToken0123456789abcdef"

func newClient(t *testing.T, srv *ghtest.Server) *Client {
	t.Helper()
	c, err := New(Options{APIURL: srv.URL, Token: testToken, MinGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsurePRCreateUpdateLabels(t *testing.T) {
	srv := ghtest.New(t, testToken)
	srv.AddRepo(ghtest.Repo{Owner: "acme", Name: "train", CanPush: true})
	c := newClient(t, srv)
	ctx := context.Background()
	spec := PRSpec{Owner: "acme", Repo: "train", Base: "main", Head: "pallasify/tpu-migration", Title: "T1",
		Body: "body one", Draft: true, Labels: []string{"pallasify", "tpu"}, ChangeSet: "cs1"}

	res, err := c.EnsurePR(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != Created || res.Number != 1 || !res.Draft {
		t.Fatalf("first: %+v", res)
	}
	res, err = c.EnsurePR(ctx, spec)
	if err != nil || res.Action != Unchanged {
		t.Fatalf("second (same content): %+v %v", res, err)
	}
	spec.Body, spec.ChangeSet, spec.Labels = "body two", "cs2", []string{"pallasify", "tpu", "extra"}
	res, err = c.EnsurePR(ctx, spec)
	if err != nil || res.Action != Updated || res.Number != 1 {
		t.Fatalf("third (changed): %+v %v", res, err)
	}
	prs := srv.PRs()
	if len(prs) != 1 {
		t.Fatalf("want 1 PR, got %d", len(prs))
	}
	p := prs[0]
	if !p.Draft || p.Title != "T1" || !strings.Contains(p.Body, "body two") || !strings.Contains(p.Body, ChangeSetMarker("cs2")) {
		t.Errorf("pr = %+v", p)
	}
	if strings.Join(p.Labels, ",") != "pallasify,tpu,extra" {
		t.Errorf("labels = %v", p.Labels)
	}
	if n := srv.Count("POST", "/pulls"); n != 1 {
		t.Errorf("creates = %d", n)
	}
	if n := srv.Count("POST", "/labels"); n != 2 {
		t.Errorf("label calls = %d (want 2: initial, then only the missing one)", n)
	}
	for _, r := range srv.Requests() {
		if r.Auth != "Bearer "+testToken {
			t.Errorf("request %s %s auth %q", r.Method, r.Path, r.Auth)
		}
	}
}

func TestEnsurePRAlreadyExists422(t *testing.T) {
	srv := ghtest.New(t, testToken)
	c := newClient(t, srv)
	ctx := context.Background()
	spec := PRSpec{Owner: "acme", Repo: "train", Base: "main", Head: "b", Title: "T", Body: "x", Draft: true}
	if _, err := c.EnsurePR(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// The list says nothing is open (stale), the create says it exists.
	srv.Fail("GET", "/pulls", 1, 200, "", "[]")
	spec.Body = "y"
	res, err := c.EnsurePR(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != Updated || len(srv.PRs()) != 1 || !strings.HasPrefix(srv.PRs()[0].Body, "y") {
		t.Fatalf("res %+v prs %+v", res, srv.PRs())
	}
}

func TestFindClosed(t *testing.T) {
	srv := ghtest.New(t, testToken)
	c := newClient(t, srv)
	ctx := context.Background()
	spec := PRSpec{Owner: "acme", Repo: "train", Base: "main", Head: "b", Title: "T", Body: "x", ChangeSet: "abc"}
	res, _ := c.EnsurePR(ctx, spec)
	if got, err := c.FindClosed(ctx, spec); err != nil || got != nil {
		t.Fatalf("open PR reported closed: %+v %v", got, err)
	}
	srv.ClosePR(res.Number, false)
	got, err := c.FindClosed(ctx, spec)
	if err != nil || got == nil || got.Action != ClosedByHuman || got.Number != res.Number {
		t.Fatalf("closed: %+v %v", got, err)
	}
	spec.ChangeSet = "different"
	if got, _ := c.FindClosed(ctx, spec); got != nil {
		t.Fatalf("a different change set matched: %+v", got)
	}
}

func TestSecondaryRateLimitWaited(t *testing.T) {
	srv := ghtest.New(t, testToken)
	c := newClient(t, srv)
	srv.SecondaryLimit("POST", "/pulls", 1)
	start := time.Now()
	res, err := c.EnsurePR(context.Background(), PRSpec{Owner: "o", Repo: "r", Base: "main", Head: "b", Title: "T", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("Retry-After not honoured: %v", el)
	}
	if res.Action != Created || srv.Count("POST", "/pulls") != 2 {
		t.Errorf("res %+v, creates %d", res, srv.Count("POST", "/pulls"))
	}
	var statuses []int
	for _, r := range srv.Requests() {
		if r.Method == "POST" {
			statuses = append(statuses, r.Status)
		}
	}
	if len(statuses) < 2 || statuses[0] != 403 || statuses[1] != 201 {
		t.Errorf("statuses %v", statuses)
	}

	// A wait beyond MaxWait surfaces as an error instead of hanging.
	c2, _ := New(Options{APIURL: srv.URL, Token: testToken, MinGap: -1, MaxWait: time.Second})
	srv.SecondaryLimit("POST", "/comments", 3600)
	if err := c2.Comment(context.Background(), "o", "r", 1, "hi"); err == nil {
		t.Error("a one-hour Retry-After was not reported")
	}
}

func TestRetryWaitPrimary(t *testing.T) {
	now := time.Unix(1000, 0)
	h := http.Header{}
	h.Set("X-Ratelimit-Remaining", "0")
	h.Set("X-Ratelimit-Reset", "1010")
	if d, ok := retryWait(&http.Response{StatusCode: 403, Header: h}, now); !ok || d != 11*time.Second {
		t.Errorf("primary: %v %v", d, ok)
	}
	if _, ok := retryWait(&http.Response{StatusCode: 404, Header: h}, now); ok {
		t.Error("404 retried")
	}
	if _, ok := retryWait(&http.Response{StatusCode: 403, Header: http.Header{}}, now); ok {
		t.Error("plain 403 retried")
	}
}

func TestAppInstallationAuth(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	srv := ghtest.New(t)
	srv.AppKey, srv.AppID = &key.PublicKey, 42
	srv.SetPermission("acme", "train", "alice", "write")
	itr, err := AppTransport(http.DefaultTransport, srv.URL, 42, 7, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{APIURL: srv.URL, Transport: itr, MinGap: -1})
	if err != nil {
		t.Fatal(err)
	}
	perm, err := c.Permission(context.Background(), "acme", "train", "alice")
	if err != nil || perm != "write" || !CanWrite(perm) {
		t.Fatalf("perm %q %v", perm, err)
	}
	tok, err := itr.Token(context.Background())
	if err != nil || len(srv.Minted) != 1 || tok != srv.Minted[0] {
		t.Fatalf("token %q %v minted %v", tok, err, srv.Minted)
	}
	// Wrong app key: refused.
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	bad, _ := AppTransport(nil, srv.URL, 42, 7, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}))
	if _, err := bad.Token(context.Background()); err == nil {
		t.Error("token minted for a JWT signed with the wrong key")
	}
}
