package llm_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/transforms/llm/llmtest"
	"github.com/pallasify/pallasify/validators"
)

const root = "../.."

// gelu is the kernel every scenario drafts: fixtures/kernels/gelu as a
// discovered kernel of a one-file tree, validated by one StageValidator (its
// reference built once by the emulator) for the whole package.
type geluEnv struct {
	dir    string
	kernel *kernels.Kernel
	v      *validators.StageValidator
	py     string
	err    error
}

var (
	geluOnce sync.Once
	gelu     geluEnv
)

func TestMain(m *testing.M) {
	code := m.Run()
	if gelu.v != nil {
		gelu.v.Close()
	}
	if gelu.dir != "" {
		os.RemoveAll(gelu.dir)
	}
	os.Exit(code)
}

func needPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		py, _ = filepath.Abs(filepath.Join(root, ".venv", "bin", "python"))
	}
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("PALLASIFY_REQUIRE_STACK is set but there is no Python at %s (make venv)", py)
		}
		t.Skip("no Python venv (run make venv or set PALLASIFY_PYTHON)")
	}
	return py
}

func setupGelu(t *testing.T) geluEnv {
	t.Helper()
	py := needPython(t)
	geluOnce.Do(func() {
		gelu.py = py
		src, err := os.ReadFile(filepath.Join(root, "fixtures", "kernels", "gelu", "kernel.cu"))
		if err != nil {
			gelu.err = err
			return
		}
		if gelu.dir, err = os.MkdirTemp("", "pallasify-llm-test-"); err != nil {
			gelu.err = err
			return
		}
		if err := os.MkdirAll(filepath.Join(gelu.dir, "csrc"), 0o755); err != nil {
			gelu.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(gelu.dir, "csrc", "gelu.cu"), src, 0o644); err != nil {
			gelu.err = err
			return
		}
		inv, probs := kernels.Discover(context.Background(), gelu.dir, nil)
		if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
			gelu.err = errors.New("discovery of gelu: no kernel with a spec")
			_ = probs
			return
		}
		gelu.kernel = inv.Kernels[0]
		gelu.v = validators.NewStageValidator(validators.Options{Python: py, Quick: true, Seeds: 2,
			CacheDir: filepath.Join(gelu.dir, "verdicts")})
	})
	if gelu.err != nil {
		t.Fatalf("gelu: %v", gelu.err)
	}
	return gelu
}

// countingValidator counts the draft stage's validations.
type countingValidator struct {
	v pipeline.KernelValidator
	n atomic.Int32
}

func (c *countingValidator) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*pipeline.DraftVerdict, error) {
	c.n.Add(1)
	return c.v.Validate(ctx, k, module)
}

// runResult is what drafting gelu through the draft stage's repair loop
// against a scripted server gave.
type runResult struct {
	draft       *pipeline.Draft
	proofs      int
	srv         *llmtest.Server
	validations int
	client      *llm.Client
}

func draftScenario(t *testing.T, scenario string, tweak func(*llm.Settings), cacheDir string) runResult {
	t.Helper()
	setupGelu(t)
	return draftOn(t, llmtest.New(t, root, llmtest.Load(t, root, scenario)), tweak, cacheDir)
}

func draftOn(t *testing.T, srv *llmtest.Server, tweak func(*llm.Settings), cacheDir string) runResult {
	t.Helper()
	env := setupGelu(t)
	s, err := llm.Resolve(configLLM(), llm.Flags{BaseURL: srv.URL(), Model: "test-model", CacheDir: cacheDir}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = 20 * time.Second
	if tweak != nil {
		tweak(&s)
	}
	d, c, err := llm.New(s, env.dir, validators.PinnedJAX())
	if err != nil {
		t.Fatal(err)
	}
	cv := &countingValidator{v: env.v}
	w := pipeline.NewKernelWork(cv, d)
	w.Gate = &validators.Gate{Python: env.py}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dr, err := w.DraftKernel(ctx, env.kernel)
	if err != nil {
		t.Fatal(err)
	}
	return runResult{draft: dr, proofs: len(w.Proven()), srv: srv, validations: int(cv.n.Load()), client: c}
}

func (r runResult) proven() bool { return r.draft.Verdict == pipeline.VerdictProven && r.proofs == 1 }

func TestWrongThenRight(t *testing.T) {
	r := draftScenario(t, "wrong_then_right", nil, "")
	if !r.proven() || r.draft.Rounds != 2 || r.draft.Drafter != llm.DrafterName {
		t.Fatalf("draft %+v", r.draft)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// The first prompt carried the discovered unit and its launch site.
	first := reqs[0].LastUser()
	for _, want := range []string{"gelu_kernel", "BEGIN launch sites", "csrc/gelu.cu:", "<<<blocks, kBlockSize"} {
		if !strings.Contains(first, want) {
			t.Errorf("first prompt lacks %q", want)
		}
	}
	fb := reqs[1].LastUser()
	for _, want := range []string{"validator rejected", "V-MISMATCH", "seed", "first mismatching indices"} {
		if !strings.Contains(fb, want) {
			t.Errorf("second request's feedback lacks %q:\n%s", want, fb)
		}
	}
	// The conversation carries the first draft as the assistant turn.
	ms := reqs[1].Messages()
	if len(ms) != 4 || ms[2][0] != "assistant" {
		t.Errorf("second request messages: %d, roles %v", len(ms), ms)
	}
	if r.draft.Calls != 2 || r.draft.Tokens != 300 || r.draft.Stats == nil || r.validations != 2 {
		t.Errorf("draft %+v after %d validations, want 2 calls 300 tokens", r.draft, r.validations)
	}
	if got := r.client.Usage(); got.Calls != 2 {
		t.Errorf("client totals %+v", got)
	}
}

func TestHallucinatedKeywordRejectedByGate(t *testing.T) {
	r := draftScenario(t, "hallucinated_kwarg", nil, "")
	if !r.proven() || r.draft.Rounds != 2 {
		t.Fatalf("draft %+v", r.draft)
	}
	if r.validations != 1 {
		t.Errorf("validator ran %d times; the gate must stop the first draft before it runs", r.validations)
	}
	fb := r.srv.Requests()[1].LastUser()
	for _, want := range []string{"refused before running", "no keyword argument 'grid_size'", "did you mean grid_spec, grid?",
		"no keyword argument 'block_dims'", "pltpu.TPUCompilerParams does not exist", "did you mean CompilerParams?"} {
		if !strings.Contains(fb, want) {
			t.Errorf("feedback lacks %q:\n%s", want, fb)
		}
	}
}

func TestMalformedJSON(t *testing.T) {
	r := draftScenario(t, "malformed_json", nil, "")
	if !r.proven() || r.draft.Rounds != 2 || r.validations != 1 {
		t.Fatalf("draft %+v after %d validations", r.draft, r.validations)
	}
	fb := r.srv.Requests()[1].LastUser()
	if !strings.Contains(fb, "could not be read") || !strings.Contains(fb, "does not decode") {
		t.Errorf("feedback:\n%s", fb)
	}
}

func TestSchemaIgnoredFencedFallback(t *testing.T) {
	r := draftScenario(t, "schema_ignored", nil, "")
	if !r.proven() || r.draft.Rounds != 1 {
		t.Fatalf("draft %+v", r.draft)
	}
	if rf := r.srv.Requests()[0].Body["response_format"]; rf == nil {
		t.Error("the request did not ask for structured output")
	}
}

func TestSchemaRefusedRetriedWithout(t *testing.T) {
	r := draftScenario(t, "schema_refused", nil, "")
	if !r.proven() {
		t.Fatalf("draft %+v", r.draft)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 2 || reqs[0].Body["response_format"] == nil || reqs[1].Body["response_format"] != nil {
		t.Fatalf("requests: %d; want one with response_format then one without", len(reqs))
	}
}

func TestRateLimitedRetryAfter(t *testing.T) {
	start := time.Now()
	r := draftScenario(t, "rate_limited", nil, "")
	if !r.proven() {
		t.Fatalf("draft %+v", r.draft)
	}
	if n := len(r.srv.Requests()); n != 2 {
		t.Errorf("%d HTTP requests, want 2 (429 then the reply)", n)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("finished in %s: Retry-After: 1 was not honoured", el)
	}
	if r.draft.Calls != 1 {
		t.Errorf("calls %d: a transport retry is one call", r.draft.Calls)
	}
}

func TestRateLimitedGivesUpWithStatus(t *testing.T) {
	srv := llmtest.New(t, root, llmtest.Script{Steps: []llmtest.Step{{Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfter: "0"}}})
	c, err := llm.NewClient(llm.Settings{BaseURL: srv.URL(), Model: "m", Retries: 1, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), []llm.Message{{Role: "user", Content: "hi"}}, llm.Sampling{})
	if llm.StatusCode(err) != 429 {
		t.Fatalf("err %v (status %d), want the server's 429 kept", err, llm.StatusCode(err))
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (1 retry)", n)
	}
}

func TestHungResponseCutByDeadline(t *testing.T) {
	start := time.Now()
	r := draftScenario(t, "hung_stream", func(s *llm.Settings) { s.Timeout = 1500 * time.Millisecond }, "")
	el := time.Since(start)
	if r.draft.Verdict != pipeline.VerdictNotDrafted || !strings.Contains(r.draft.Reason, "deadline") {
		t.Fatalf("draft %+v", r.draft)
	}
	if el > 15*time.Second {
		t.Errorf("took %s; the per-call deadline is 1.5s", el)
	}
	if r.validations != 0 {
		t.Errorf("validated %d times", r.validations)
	}
}

func TestStreamedWrongThenRight(t *testing.T) {
	r := draftScenario(t, "wrong_then_right", func(s *llm.Settings) { s.Stream = true }, "")
	if !r.proven() || r.draft.Rounds != 2 || r.draft.Tokens != 300 {
		t.Fatalf("draft %+v", r.draft)
	}
	body := r.srv.Requests()[0].Body
	so, _ := body["stream_options"].(map[string]any)
	if body["stream"] != true || so["include_usage"] != true {
		t.Errorf("stream %v stream_options %v", body["stream"], body["stream_options"])
	}
}

func TestHungStreamCutByIdleWatchdog(t *testing.T) {
	start := time.Now()
	r := draftScenario(t, "hung_stream", func(s *llm.Settings) { s.Stream, s.IdleTimeout, s.Timeout = true, time.Second, time.Minute }, "")
	el := time.Since(start)
	if r.draft.Verdict != pipeline.VerdictNotDrafted || !strings.Contains(r.draft.Reason, "sent nothing for 1s") {
		t.Fatalf("draft %+v", r.draft)
	}
	if el > 15*time.Second {
		t.Errorf("took %s; the idle watchdog is 1s", el)
	}
}

func TestSnoopingDraftRefused(t *testing.T) {
	r := draftScenario(t, "snooping", nil, "")
	if !r.proven() || r.validations != 1 {
		t.Fatalf("draft %+v after %d validations", r.draft, r.validations)
	}
	fb := r.srv.Requests()[1].LastUser()
	for _, want := range []string{"import of 'socket' is not allowed", "call to open()"} {
		if !strings.Contains(fb, want) {
			t.Errorf("feedback lacks %q:\n%s", want, fb)
		}
	}
}

func TestCacheHitMakesNoCall(t *testing.T) {
	dir := t.TempDir()
	first := draftScenario(t, "wrong_then_right", nil, dir)
	if !first.proven() || first.draft.Calls != 2 {
		t.Fatalf("first run %+v", first.draft)
	}
	// Same kernel, endpoint, model and settings: the same conversation, every
	// reply from the cache; the server has nothing to say.
	first.srv.Reset(llmtest.Load(t, root, "hung_stream"))
	again := draftOn(t, first.srv, nil, dir)
	if !again.proven() || again.draft.Rounds != 2 {
		t.Fatalf("second run %+v", again.draft)
	}
	if n := len(again.srv.Requests()); n != 0 || again.draft.Calls != 0 || again.draft.Tokens != 0 {
		t.Fatalf("cache hit made %d requests, %d calls", n, again.draft.Calls)
	}
	// A changed sampling parameter misses the cache.
	first.srv.Reset(llmtest.Load(t, root, "wrong_then_right"))
	other := draftOn(t, first.srv, func(s *llm.Settings) { s.Seed = 99 }, dir)
	if len(other.srv.Requests()) != 2 {
		t.Errorf("changed seed: %d requests", len(other.srv.Requests()))
	}
	// --no-cache bypasses reads.
	first.srv.Reset(llmtest.Load(t, root, "wrong_then_right"))
	nc := draftOn(t, first.srv, func(s *llm.Settings) { s.NoCache = true }, dir)
	if len(nc.srv.Requests()) != 2 {
		t.Errorf("--no-cache: %d requests", len(nc.srv.Requests()))
	}
}

func TestBestOfKFirstProvenWins(t *testing.T) {
	r := draftScenario(t, "best_of_k", func(s *llm.Settings) { s.Samples, s.Concurrency, s.Rounds = 2, 2, 2 }, "")
	if !r.proven() {
		t.Fatalf("draft %+v", r.draft)
	}
	var temps []float64
	for _, q := range r.srv.Requests() {
		temps = append(temps, q.Body["temperature"].(float64))
	}
	var greedy, warm bool
	for _, tp := range temps {
		greedy = greedy || tp < 1e-30
		warm = warm || tp > 0.5
	}
	if !greedy || !warm {
		t.Errorf("temperatures %v: want sample 0 greedy and sample 1 at the sample temperature", temps)
	}
	if r.draft.Calls < 2 {
		t.Errorf("draft %+v: both samples' calls count", r.draft)
	}
}

func TestRequestBodyTemperatureZeroSent(t *testing.T) {
	srv := llmtest.New(t, root, llmtest.Script{Steps: []llmtest.Step{{Content: "ok"}}})
	c, err := llm.NewClient(llm.Settings{BaseURL: srv.URL(), Model: "m", Timeout: 5 * time.Second, Seed: 7}, prompts.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), []llm.Message{{Role: "user", Content: "hi"}}, llm.Sampling{Seed: 7, MaxTokens: 321}); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[0].Body
	temp, ok := body["temperature"].(float64)
	if !ok || temp <= 0 || temp > 1e-30 {
		t.Errorf("temperature %v (present %v): want the smallest non-zero float, never dropped", body["temperature"], ok)
	}
	if body["seed"] != float64(7) || body["max_tokens"] != float64(321) {
		t.Errorf("seed %v max_tokens %v", body["seed"], body["max_tokens"])
	}
	rf, _ := body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || js["schema"] == nil {
		t.Errorf("response_format %v", rf)
	}
	if got := float32(temp); got != math.SmallestNonzeroFloat32 {
		t.Errorf("temperature %g", got)
	}
}

func TestTokenBudget(t *testing.T) {
	srv := llmtest.New(t, root, llmtest.Script{Steps: []llmtest.Step{{Content: "a"}, {Content: "b"}, {Content: "c"}}})
	c, err := llm.NewClient(llm.Settings{BaseURL: srv.URL(), Model: "m", Timeout: 5 * time.Second, Budget: 250}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, err := c.Chat(context.Background(), []llm.Message{{Role: "user", Content: "x"}}, llm.Sampling{})
		if (i < 2) != (err == nil) || (i == 2 && !errors.Is(err, llm.ErrBudget)) {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests after the budget was spent", n)
	}
}

func TestRateLimiterRPM(t *testing.T) {
	steps := make([]llmtest.Step, 8)
	for i := range steps {
		steps[i] = llmtest.Step{Content: "ok"}
	}
	srv := llmtest.New(t, root, llmtest.Script{Steps: steps})
	c, err := llm.NewClient(llm.Settings{BaseURL: srv.URL(), Model: "m", Timeout: 5 * time.Second, RPM: 60}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 7 { // burst 6, then one per second
		if _, err := c.Chat(context.Background(), []llm.Message{{Role: "user", Content: "x"}}, llm.Sampling{}); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 800*time.Millisecond {
		t.Errorf("7 calls at 60 RPM (burst 6) took %s", el)
	}
}

func TestNoEndpoint(t *testing.T) {
	s, err := llm.Resolve(configLLM(), llm.Flags{}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ok, fix := s.Configured()
	if ok || !strings.Contains(fix, llm.EnvBaseURL) || strings.Contains(fix, "\n") {
		t.Fatalf("configured %v fix %q", ok, fix)
	}
	if _, _, err := llm.New(s, "", "0.10.2"); !errors.Is(err, llm.ErrNoEndpoint) {
		t.Fatalf("New: %v", err)
	}
}

func TestCacheAtomicRoundTrip(t *testing.T) {
	c := &llm.Cache{Dir: t.TempDir()}
	if err := c.Put("replies", llm.Key("x"), llm.Reply{Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	var r llm.Reply
	if !c.Get("replies", llm.Key("x"), &r) || r.Content != "hello" {
		t.Fatalf("got %+v", r)
	}
	c.NoRead = true
	if c.Get("replies", llm.Key("x"), &r) {
		t.Error("NoRead still read")
	}
	var nilCache *llm.Cache
	if nilCache.Get("replies", "k", &r) || nilCache.Put("replies", "k", r) != nil {
		t.Error("nil cache")
	}
}

func configLLM() config.LLMConfig { return config.Defaults().LLM }
