package gh

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A GitHub API that accepts a request and never answers fails the call
// after the request timeout instead of hanging it (migrate --pr has no
// deadline of its own).
func TestSilentAPITimesOut(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	c, err := New(Options{APIURL: srv.URL, Token: "t", MinGap: -1, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, _, err := c.API.Repositories.Get(context.Background(), "acme", "train")
		res <- err
	}()
	select {
	case err := <-res:
		if err == nil || !strings.Contains(err.Error(), "no answer") {
			t.Fatalf("err %v, want no answer within the request timeout", err)
		}
		t.Log(err)
	case <-time.After(30 * time.Second): // generous: the limit is 300ms
		t.Fatal("a call to a silent API still running after 30s")
	}
}
