// Package gittest builds real git fixtures for delivery tests: repositories
// with CUDA-flavoured Python sources, bare remotes, a `git http-backend`
// server behind basic auth, and a small stand-in migrator that rewrites
// device strings the way the real pipeline does (so delivery can be tested
// before and independently of the rule set). Only tests import it.
package gittest

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
)

// Env is the environment for git commands: no user or system config.
func Env() []string {
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@example.com",
		"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@example.com",
		"GIT_TERMINAL_PROMPT=0")
}

// Git runs git in dir and returns its trimmed stdout; it fails the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitErr runs git in dir.
func GitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Sources returns a small PyTorch project with CUDA idioms; variant changes
// the contents so repositories differ.
func Sources(variant int) map[string]string {
	return map[string]string{
		"README.md": fmt.Sprintf("# project %d\n", variant),
		"train.py": fmt.Sprintf(`import torch

def main():
    device = torch.device("cuda")
    model = torch.nn.Linear(%d, 2).to("cuda")
    x = torch.randn(4, %d).cuda()
    print(model(x).sum())

if __name__ == "__main__":
    main()
`, variant+2, variant+2),
		"hf/infer.py": `from transformers import AutoModel

model = AutoModel.from_pretrained("gpt2", device_map="cuda")
`,
		"fast.py": `import torch

net = torch.compile(torch.nn.Linear(2, 2))
`,
		"utils/__init__.py": "",
	}
}

// WriteTree writes files under dir.
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// NewRemote creates a bare repository at <root>/<name>.git whose main branch
// holds files in one commit, and returns its path.
func NewRemote(t testing.TB, root, name string, files map[string]string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, work, "init", "-q", "-b", "main")
	WriteTree(t, work, files)
	Git(t, work, "add", "-A")
	Git(t, work, "commit", "-q", "-m", "initial import")
	bare := filepath.Join(root, name+".git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, root, "clone", "-q", "--bare", work, bare)
	Git(t, bare, "config", "http.receivepack", "true")
	return bare
}

// HTTPServer serves the bare repositories under root with `git http-backend`
// behind HTTP basic auth (user, password). Requests is the number of
// requests seen; Unauthorized counts the ones refused.
type HTTPServer struct {
	*httptest.Server
	mu           sync.Mutex
	Requests     int
	Unauthorized int
	// Passwords seen in Authorization headers (to check what clients sent).
	Passwords []string
	// Raw holds every request as text (method, URL, every header), to grep
	// for a token wherever a client might have put it.
	Raw []string
	// CA is the PEM certificate of an HTTPS server ("" for plain HTTP).
	CA []byte
}

// Host is the server's host:port.
func (s *HTTPServer) Host() string {
	return strings.TrimPrefix(strings.TrimPrefix(s.URL, "https://"), "http://")
}

// Seen reports whether secret appears anywhere in the requests received.
func (s *HTTPServer) Seen(secret string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.Raw {
		if strings.Contains(r, secret) {
			return true
		}
	}
	return false
}

// ServeOpenHTTPBackend serves root over plain HTTP without any
// authentication (an ordinary public git host), recording every request.
func ServeOpenHTTPBackend(t testing.TB, root string) *HTTPServer {
	t.Helper()
	return serveBackend(t, root, nil, false)
}

// ServeHTTPSBackend is ServeHTTPBackend over HTTPS (a self-signed
// certificate: pass CA to the client).
func ServeHTTPSBackend(t testing.TB, root, user, password string) *HTTPServer {
	t.Helper()
	return serveBackend(t, root, func(u, p string) bool { return u == user && p == password }, true)
}

// ServeHTTPSBackendFunc is ServeHTTPSBackend with a credential check function.
func ServeHTTPSBackendFunc(t testing.TB, root string, check func(user, password string) bool) *HTTPServer {
	t.Helper()
	return serveBackend(t, root, check, true)
}

// ServeHTTPBackend starts the server; it is closed when the test ends.
func ServeHTTPBackend(t testing.TB, root, user, password string) *HTTPServer {
	t.Helper()
	return ServeHTTPBackendFunc(t, root, func(u, p string) bool { return u == user && p == password })
}

// ServeHTTPBackendFunc is ServeHTTPBackend with a credential check function.
func ServeHTTPBackendFunc(t testing.TB, root string, check func(user, password string) bool) *HTTPServer {
	t.Helper()
	return serveBackend(t, root, check, false)
}

// serveBackend serves root; check nil means no authentication.
func serveBackend(t testing.TB, root string, check func(user, password string) bool, useTLS bool) *HTTPServer {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	s := &HTTPServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		var raw strings.Builder
		fmt.Fprintf(&raw, "%s %s\n", r.Method, r.URL.String())
		for k, vs := range r.Header {
			fmt.Fprintf(&raw, "%s: %s\n", k, strings.Join(vs, ", "))
		}
		s.mu.Lock()
		s.Requests++
		s.Raw = append(s.Raw, raw.String())
		if ok {
			s.Passwords = append(s.Passwords, p)
		}
		if check != nil && (!ok || !check(u, p)) {
			s.Unauthorized++
			s.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		s.mu.Unlock()
		cg := &cgi.Handler{
			Path: gitPath,
			Args: []string{"http-backend"},
			Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + u,
				"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		}
		cg.ServeHTTP(w, r)
	})
	if useTLS {
		s.Server = httptest.NewTLSServer(h)
		s.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Server.Certificate().Raw})
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

var (
	deviceRE  = regexp.MustCompile(`"cuda"`)
	dotCudaRE = regexp.MustCompile(`\.cuda\(\)`)
	hfRE      = regexp.MustCompile(`device_map="cuda"`)
	compileRE = regexp.MustCompile(`torch\.compile\(([^()]*(?:\([^()]*\))?[^()]*)\)`)
)

// Migrate is a stand-in for pipeline.Migrate: it walks the .py files under
// root and rewrites device strings (PDV001), .cuda() (PDV002), Hugging Face
// device_map (PHF001) and torch.compile settings (PCM001), recording applied
// diagnostics with their codes. It never writes to root.
func Migrate(ctx context.Context, root string) (*pipeline.Run, error) {
	run := &pipeline.Run{Root: root, Target: "tpu", Version: "test"}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".py") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		f := &pipeline.File{Path: filepath.ToSlash(rel), Lang: "python", Bytes: int64(len(src)), Mode: 0o644}
		out := string(src)
		apply := func(re *regexp.Regexp, repl, code, rule string) {
			for range re.FindAllStringIndex(out, -1) {
				f.Diagnostics = append(f.Diagnostics, pipeline.Diagnostic{Code: code, Rule: rule, Severity: pipeline.SevInfo,
					Path: f.Path, Message: "rewritten for tpu", Safety: "safe", Applied: true})
			}
			out = re.ReplaceAllString(out, repl)
		}
		apply(hfRE, `device_map="tpu"`, "PHF001", "hf-device-map")
		apply(deviceRE, `"tpu"`, "PDV001", "device-string")
		apply(dotCudaRE, `.to("tpu")`, "PDV002", "cuda-call")
		if !strings.Contains(out, `backend="openxla"`) {
			apply(compileRE, `torch.compile($1, backend="openxla", dynamic=False)`, "PCM001", "compile-settings")
		}
		if out != string(src) {
			f.Original, f.Updated = src, []byte(out)
		}
		run.Files = append(run.Files, f)
		return nil
	})
	sort.Slice(run.Files, func(i, j int) bool { return run.Files[i].Path < run.Files[j].Path })
	return run, err
}
