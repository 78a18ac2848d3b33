package bot_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// filler is a request body of n bytes that allocates nothing: the client's
// side of the test must not be what uses the memory.
type filler struct{ n int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return int(k), nil
}

// heapPeak samples the live heap until stop is closed and returns its
// largest value.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var m runtime.MemStats
		var peak uint64
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return out
}

// Twenty parallel 25 MB webhook bodies nobody signed (a well-formed but
// forged X-Hub-Signature-256, a malformed one, none) are refused without
// the server holding them all at once: before, each handler buffered its
// whole body before checking the signature (20 x 25 MB = 615 MB of heap).
// A body declared larger than GitHub's 25 MB cap is refused unread.
func TestBotBoundsUnauthenticatedBodies(t *testing.T) {
	e := newEnv(t)
	const size = 25 << 20
	sigs := []string{
		"sha256=" + strings.Repeat("ab", 32), // well-formed, wrong
		"sha256=zz",                          // malformed
		"",                                   // missing
		"sha1=" + strings.Repeat("ab", 20),   // not sha256
	}
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableKeepAlives: true}}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := make(chan struct{})
	peak := heapPeak(stop)
	var wg sync.WaitGroup
	var accepted, refused, failed atomic.Int64
	statuses := make([]string, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sig := sigs[0]
			if i%4 != 0 {
				sig = sigs[i%4]
			}
			req, _ := http.NewRequest("POST", e.http.URL+"/webhook", &filler{n: size})
			req.ContentLength = size
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issue_comment")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("big-%d", i))
			if sig != "" {
				req.Header.Set("X-Hub-Signature-256", sig)
			}
			resp, err := client.Do(req)
			if err != nil {
				// The server answered and closed before the body was sent.
				failed.Add(1)
				statuses[i] = "closed"
				return
			}
			resp.Body.Close()
			statuses[i] = fmt.Sprint(resp.StatusCode)
			if resp.StatusCode < 300 {
				accepted.Add(1)
			} else {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	grew := int64(<-peak) - int64(base.HeapAlloc)
	t.Logf("statuses %v; peak heap growth %d MB", statuses, grew>>20)
	if accepted.Load() != 0 {
		t.Errorf("%d unsigned bodies accepted", accepted.Load())
	}
	// Generous: the old handler held about 20 x 25 MB (545 MB measured);
	// the budget is 64 MB of bodies, and the heap may hold as much again in
	// garbage until the next collection.
	if grew > 256<<20 {
		t.Errorf("the heap grew by %d MB serving 20 unsigned 25 MB bodies", grew>>20)
	}

	// Declared over the cap: refused with 413 before a byte is read.
	req, _ := http.NewRequest("POST", e.http.URL+"/webhook", &filler{n: size + 1})
	req.ContentLength = size + 1
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", "too-big")
	req.Header.Set("X-Hub-Signature-256", sigs[0])
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a body over 25 MB: status %d, want 413", resp.StatusCode)
		}
	}
	e.srv.Wait()
	if *e.runs != 0 || len(e.api.Requests()) != 0 {
		t.Fatalf("a refused webhook did work: runs %d, api requests %d", *e.runs, len(e.api.Requests()))
	}
}

// The signature is computed over the raw body whatever its form: GitHub's
// form-encoded deliveries (payload=...) are accepted as before.
func TestBotFormPayload(t *testing.T) {
	e := newEnv(t)
	js, _ := json.Marshal(e.comment("alice", "/pallasify explain PDV001"))
	body := []byte(url.Values{"payload": {string(js)}}.Encode())
	req, _ := http.NewRequest("POST", e.http.URL+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", "form-1")
	req.Header.Set("X-Hub-Signature-256", good(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d", resp.StatusCode)
	}
	e.srv.Wait()
	if cs := e.api.Comments(); len(cs) != 1 || !strings.Contains(cs[0].Body, "Rewrites CUDA device strings.") {
		t.Fatalf("comments %+v", cs)
	}
}
