package validators

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func testPython(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatal("no Python venv (run make venv) [PALLASIFY_REQUIRE_STACK=1]")
		}
		t.Skip("no Python venv (run make venv)")
	}
	return p
}

func axpyRequest(t *testing.T, candidate string) Request {
	t.Helper()
	spec, err := ReadSpec("harness/tests/data/axpy/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	return Request{Spec: *spec, ReferencePy: "harness/tests/data/axpy/reference.py", Candidate: []byte(candidate)}
}

func goodAxpy(t *testing.T) string {
	b, err := os.ReadFile("harness/tests/data/axpy/good.py")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSandboxStopsCandidates proves the sandbox on its own (AST ban
// bypassed) and with the ban (which fires first).
func TestSandboxStopsCandidates(t *testing.T) {
	py := testPython(t)
	if err := (&sandboxCheck{}).ok(t); err != nil {
		t.Skip(err)
	}
	outside, err := os.MkdirTemp("/var/tmp", "pallasify-outside-")
	if err != nil {
		t.Skip("no writable /var/tmp")
	}
	defer os.RemoveAll(outside)
	target := filepath.Join(outside, "pwned")
	tests := []struct {
		name, src string
		skipBan   bool
		noSandbox bool
		want      string
	}{
		{"write-banned", fmt.Sprintf("with open(%q, 'w') as f:\n    f.write('x')\n", target), false, false, "V-BANNED"},
		{"write-sandbox", fmt.Sprintf("with open(%q, 'w') as f:\n    f.write('x')\n", target), true, false, "V-SANDBOX"},
		{"socket-banned", "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)\n", false, false, "V-BANNED"},
		{"socket-sandbox", "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)\n", true, false, "V-SANDBOX"},
		{"dns-sandbox", "import socket\nsocket.getaddrinfo('example.com', 80)\n", true, false, "V-SANDBOX"},
		{"loop", "while True:\n    pass\n", false, false, "V-TIMEOUT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := axpyRequest(t, tc.src+stubRun)
			opt := Options{Python: py, UnsafeSkipASTBan: tc.skipBan, NoSandbox: tc.noSandbox, Timeout: 6 * time.Second, Quick: true}
			v, err := Validate(context.Background(), req, opt)
			if err != nil {
				t.Fatal(err)
			}
			if v.Code() != tc.want || v.Verdict == Proven {
				t.Fatalf("verdict %s %q, want %s\n%s", v.Verdict, v.Reason, tc.want, v.Output)
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatalf("candidate wrote %s outside its sandbox", target)
			}
		})
	}
	// Control: without the sandbox (and the ban) the same write succeeds, so
	// it is the sandbox that stopped it above.
	req := axpyRequest(t, fmt.Sprintf("with open(%q, 'w') as f:\n    f.write('x')\n", target)+stubRun)
	if _, err := Validate(context.Background(), req, Options{Python: py, UnsafeSkipASTBan: true, NoSandbox: true, Quick: true, Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("control: unsandboxed write did not happen: %v", err)
	}
}

// stubRun completes a misbehaving candidate (it must mention pallas_call to
// get past the static launch check and be imported).
const stubRun = "\nfrom jax.experimental import pallas as pl\n\n\ndef run(args, *, interpret):\n    return {'out': pl.pallas_call}\n"

type sandboxCheck struct{}

func (sandboxCheck) ok(t *testing.T) error {
	t.Helper()
	return (&sbWrap{}).check()
}

func TestValidateProvesAndCaches(t *testing.T) {
	py := testPython(t)
	cache := t.TempDir()
	req := axpyRequest(t, goodAxpy(t))
	opt := Options{Python: py, CacheDir: cache, NoSandbox: (&sbWrap{}).check() != nil}
	v, err := Validate(context.Background(), req, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Proven() || v.Cached {
		t.Fatalf("verdict %s %q cached=%v\n%s", v.Verdict, v.Reason, v.Cached, v.Output)
	}
	if st := v.ErrorStats(); st.Cases < 20 || st.Mismatches != 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, g := range []string{"launch", "banned_calls", "non_degenerate", "determinism", "inputs_unchanged", "poisoned_outputs"} {
		if p := v.Gates[g]; p == nil || !*p {
			t.Errorf("gate %s = %v", g, p)
		}
	}
	// each case's output with its dtype, array shape and error over the
	// tolerance, for the report's histogram and shapes covered
	cases := v.CaseResults()
	if len(cases) < v.Stats.Cases {
		t.Fatalf("%d case results for %d cases", len(cases), v.Stats.Cases)
	}
	for _, c := range cases {
		if c.DType != "float32" || len(c.Shape) != 1 || c.Shape[0] != c.Sizes["n"] || c.TolRatio == nil || *c.TolRatio > 1 || c.Failed() {
			t.Fatalf("case result %+v", c)
		}
	}
	v2, err := Validate(context.Background(), req, opt)
	if err != nil || !v2.Cached || !v2.Proven() {
		t.Fatalf("second run not served from cache: %v %+v", err, v2)
	}
	if len(v2.CaseResults()) != len(cases) {
		t.Errorf("the cached verdict has %d case results; want %d", len(v2.CaseResults()), len(cases))
	}
	// A different candidate is a different key.
	req.Candidate = append(req.Candidate, []byte("\n# changed\n")...)
	if CacheKey(req, nil, nil, opt) == CacheKey(axpyRequest(t, goodAxpy(t)), nil, nil, opt) {
		t.Fatal("cache key ignores the candidate")
	}
}

func TestValidateAllKeepsOrder(t *testing.T) {
	py := testPython(t)
	good := goodAxpy(t)
	bad := strings.Replace(good, "alpha * x_ref[...] + y_ref[...]", "x_ref[...] + y_ref[...]", 1)
	if bad == good {
		t.Fatal("mutation did not apply")
	}
	reqs := []Request{axpyRequest(t, bad), axpyRequest(t, good), {Spec: axpyRequest(t, good).Spec}}
	opt := Options{Python: py, Quick: true, NoSandbox: (&sbWrap{}).check() != nil}
	res := ValidateAll(context.Background(), reqs, opt, 2)
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	if res[0].Err != nil || res[0].Verdict.Code() != "V-MISMATCH" {
		t.Fatalf("result 0: %+v %v", res[0].Verdict, res[0].Err)
	}
	if res[1].Err != nil || !res[1].Verdict.Proven() {
		t.Fatalf("result 1: %+v %v", res[1].Verdict, res[1].Err)
	}
	if res[2].Err == nil {
		t.Fatal("result 2: a request without reference must fail")
	}
}

func TestHarnessEmbedded(t *testing.T) {
	if len(HarnessHash()) != 64 || PinnedJAX() == "" {
		t.Fatalf("hash %q pinned %q", HarnessHash(), PinnedJAX())
	}
	dir := t.TempDir()
	if err := writeHarness(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"__main__.py", "protocol.py", "refworker.py", "astban.py"} {
		if _, err := os.Stat(filepath.Join(dir, "pallasify_harness", f)); err != nil {
			t.Error(err)
		}
	}
}

func TestDoctor(t *testing.T) {
	testPython(t)
	checks := Doctor(context.Background(), DoctorOptions{})
	names := map[string]Check{}
	for _, c := range checks {
		names[c.Name] = c
		if c.Why == "" || c.Status == "" {
			t.Errorf("check %+v lacks status or explanation", c)
		}
	}
	for _, n := range []string{"python", "jax", "interpret-mode checks", "g++", "bubblewrap", "git", "nvcc"} {
		if _, ok := names[n]; !ok {
			t.Errorf("missing check %s", n)
		}
	}
	if c := names["jax"]; c.Status == CheckFail {
		t.Errorf("jax: %+v", c)
	}
	for _, n := range []string{"libtpu", "tpu compile", "torch", "torch_tpu", "triton"} {
		c, ok := names[n]
		switch {
		case !ok:
			t.Errorf("missing check %s", n)
		case c.Status != CheckOK && os.Getenv("PALLASIFY_REQUIRE_STACK") == "1":
			t.Errorf("%s: %+v [PALLASIFY_REQUIRE_STACK=1: the real stack must be present]", n, c)
		}
	}
	_ = runtime.NumCPU
}
