package acquire

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
)

// silentServer accepts TCP connections on 127.0.0.1 and never answers: a
// remote that stalls before its first byte.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// stallingBackend serves root with git http-backend, but the pack response
// (POST git-upload-pack) is cut after its first stallAfter bytes and then
// held open, sending nothing more: a remote that stalls mid-pack. With
// pace > 0 the response instead trickles out in chunk-byte pieces, one per
// pace: a slow remote that keeps making progress.
func stallingBackend(t *testing.T, root string, stallAfter, chunk int, pace time.Duration) *httptest.Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cg := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
			Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}}
		if !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			cg.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		cg.ServeHTTP(rec, r)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		fl := w.(http.Flusher)
		if pace > 0 {
			for len(body) > 0 {
				n := min(chunk, len(body))
				w.Write(body[:n])
				fl.Flush()
				body = body[n:]
				select {
				case <-time.After(pace):
				case <-r.Context().Done():
					return
				case <-done:
					return
				}
			}
			return
		}
		w.Write(body[:min(stallAfter, len(body))])
		fl.Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv
}

// bigRemote is a bare repository whose pack is about size bytes of
// incompressible data.
func bigRemote(t *testing.T, root string, size int) {
	t.Helper()
	blob := make([]byte, size)
	rand.Read(blob)
	files := gittest.Sources(1)
	files["data.bin"] = string(blob)
	gittest.NewRemote(t, root, "acme/big", files)
}

// A remote that accepts and then says nothing, or stops in the middle of
// the pack, fails the clone with a coded diagnostic once no byte has
// arrived for the idle limit (or the clone deadline passes), and leaves
// nothing in the workspace. Before the deadline, migrate of such a URL
// hung for ever.
func TestCloneStalledRemote(t *testing.T) {
	root := t.TempDir()
	bigRemote(t, root, 256<<10)
	silent := silentServer(t)
	midPack := stallingBackend(t, root, 4096, 0, 0)
	cases := []struct {
		name, url   string
		clone, idle time.Duration
		code        string
	}{
		{"silent http idle", "http://" + silent + "/acme/big.git", time.Minute, 500 * time.Millisecond, CodeStalled},
		{"silent http deadline", "http://" + silent + "/acme/big.git", 700 * time.Millisecond, time.Minute, CodeTimeout},
		{"silent git protocol", "git://" + silent + "/acme/big.git", time.Minute, 500 * time.Millisecond, CodeStalled},
		{"mid-pack http", midPack.URL + "/acme/big.git", time.Minute, 500 * time.Millisecond, CodeStalled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			type result struct {
				src *Source
				err error
			}
			res := make(chan result, 1)
			start := time.Now()
			go func() {
				src, err := Open(context.Background(), c.url, Options{Workspace: ws, CloneTimeout: c.clone, IdleTimeout: c.idle})
				res <- result{src, err}
			}()
			var r result
			select {
			case r = <-res:
			case <-time.After(30 * time.Second): // generous: the limits are under a second
				t.Fatalf("clone of a stalled remote still running after 30s")
			}
			if r.err == nil {
				r.src.Cleanup()
				t.Fatal("cloned a stalled remote")
			}
			if !strings.HasPrefix(r.err.Error(), c.code+": ") || !strings.Contains(r.err.Error(), "acme/big.git") {
				t.Errorf("error %q, want it to start with %s: and name the URL", r.err, c.code)
			}
			if errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, context.Canceled) {
				t.Errorf("error %q reads as the caller's own deadline or cancellation", r.err)
			}
			t.Logf("%s after %s: %v", c.name, time.Since(start).Round(time.Millisecond), r.err)
			if entries, _ := os.ReadDir(ws); len(entries) != 0 {
				t.Errorf("workspace keeps a partial clone: %v", entries)
			}
		})
	}
}

// The caller's cancellation stops a stalled clone too, and reads as the
// caller's (context.Canceled), not as a stall.
func TestCloneCancelled(t *testing.T) {
	silent := silentServer(t)
	ws := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := Open(ctx, "http://"+silent+"/o/r.git", Options{Workspace: ws})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("workspace keeps a partial clone: %v", entries)
	}
}

// A slow remote that keeps sending is not a stalled one: the clone takes
// several idle limits and still succeeds.
func TestCloneSlowRemoteProgresses(t *testing.T) {
	root := t.TempDir()
	bigRemote(t, root, 384<<10)
	// 16 KiB every 100ms: go-git writes the pack 32 KiB at a time, so the
	// clone shows progress about every 200ms, against an idle limit of 1s.
	slow := stallingBackend(t, root, 0, 16<<10, 100*time.Millisecond)
	ws := t.TempDir()
	start := time.Now()
	src, err := Open(context.Background(), slow.URL+"/acme/big.git", Options{Workspace: ws, IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Cleanup()
	took := time.Since(start)
	data, err := os.ReadFile(filepath.Join(src.Dir, "data.bin"))
	if err != nil || len(data) != 384<<10 {
		t.Fatalf("data.bin: %d bytes, %v", len(data), err)
	}
	if took < time.Second {
		t.Skipf("the clone took %s, under one idle limit: nothing shown", took)
	}
	t.Logf("slow clone took %s with a 1s idle limit", took)
}
