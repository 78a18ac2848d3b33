package llm

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

	"github.com/pallasify/pallasify/llm/llmtest"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators"
)

const root = ".."

// gelu is the kernel every scenario drafts: fixtures/kernels/gelu, with its
// reference built once by the emulator and verdicts cached for the package.
type geluEnv struct {
	kernel prompts.Kernel
	req    validators.Request
	opt    validators.Options
	err    error
}

var (
	geluOnce sync.Once
	gelu     geluEnv
	geluTmp  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if geluTmp != "" {
		os.RemoveAll(geluTmp)
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
		t.Skip("no Python venv (run make venv or set PALLASIFY_PYTHON)")
	}
	return py
}

func setupGelu(t *testing.T) geluEnv {
	t.Helper()
	py := needPython(t)
	geluOnce.Do(func() {
		fx, err := validators.LoadFixtures(filepath.Join(root, "fixtures", "kernels"))
		if err != nil {
			gelu.err = err
			return
		}
		var f *validators.Fixture
		for i := range fx {
			if fx[i].Name == "gelu" {
				f = &fx[i]
			}
		}
		if f == nil {
			gelu.err = errors.New("no gelu fixture")
			return
		}
		geluTmp, err = os.MkdirTemp("", "pallasify-llm-test-")
		if err != nil {
			gelu.err = err
			return
		}
		req, _, err := validators.FixtureReference(context.Background(), *f, false, geluTmp)
		if err != nil {
			gelu.err = err
			return
		}
		spec := f.Spec
		src := req.KernelTU
		if src == "" {
			b, _ := os.ReadFile(filepath.Join(f.Dir, "kernel.cu"))
			src = string(b)
		}
		gelu.kernel = prompts.Kernel{ID: spec.ID, Name: spec.Name, Class: spec.Class, Path: spec.Source.Path,
			Origin: spec.Source.Origin, Source: src, Spec: spec,
			Launches: []string{"gelu_kernel<float><<<blocks, kBlockSize, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);"}}
		gelu.req = req
		gelu.opt = validators.Options{Python: py, CacheDir: filepath.Join(geluTmp, "verdicts"), Quick: true, Seeds: 2}
	})
	if gelu.err != nil {
		t.Fatalf("gelu reference: %v", gelu.err)
	}
	return gelu
}

// run drafts gelu against a scripted server and counts validations.
type runResult struct {
	out         *Outcome
	srv         *llmtest.Server
	validations int
	client      *Client
}

func draftScenario(t *testing.T, scenario string, tweak func(*Settings), cacheDir string) runResult {
	t.Helper()
	setupGelu(t)
	return draftOn(t, llmtest.New(t, root, llmtest.Load(t, root, scenario)), tweak, cacheDir)
}

func draftOn(t *testing.T, srv *llmtest.Server, tweak func(*Settings), cacheDir string) runResult {
	t.Helper()
	env := setupGelu(t)
	s, err := Resolve(configLLM(), Flags{BaseURL: srv.URL(), Model: "test-model", CacheDir: cacheDir}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = 20 * time.Second
	if tweak != nil {
		tweak(&s)
	}
	d, c, err := New(s, &Gate{Python: env.opt.Python})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	job := Job{Kernel: env.kernel, Validate: func(ctx context.Context, cand []byte) (*validators.Verdict, error) {
		n.Add(1)
		r := env.req
		r.Candidate = cand
		return validators.Validate(ctx, r, env.opt)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := d.Draft(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	return runResult{out: out, srv: srv, validations: int(n.Load()), client: c}
}

func TestWrongThenRight(t *testing.T) {
	r := draftScenario(t, "wrong_then_right", nil, "")
	if r.out.Status != StatusProven || r.out.Rounds != 2 {
		t.Fatalf("outcome %s after %d rounds (%s); attempts %+v", r.out.Status, r.out.Rounds, r.out.Reason, r.out.Attempts)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
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
	if r.out.Usage.Calls != 2 || r.out.Usage.Tokens() != 300 {
		t.Errorf("usage %+v, want 2 calls 300 tokens", r.out.Usage)
	}
	pd := r.out.PipelineDraft()
	if pd.Drafter != "llm" || pd.Verdict != "proven" || pd.Rounds != 2 || pd.Tokens != 300 || pd.Calls != 2 || pd.Stats == nil {
		t.Errorf("pipeline draft %+v", pd)
	}
	if got := r.client.Usage(); got.Calls != 2 {
		t.Errorf("client totals %+v", got)
	}
}

func TestHallucinatedKeywordRejectedByGate(t *testing.T) {
	r := draftScenario(t, "hallucinated_kwarg", nil, "")
	if r.out.Status != StatusProven || r.out.Rounds != 2 {
		t.Fatalf("outcome %s after %d rounds (%s)", r.out.Status, r.out.Rounds, r.out.Reason)
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
	if a := r.out.Attempts[0]; a.Stage != "gate" {
		t.Errorf("first attempt %+v", a)
	}
}

func TestMalformedJSON(t *testing.T) {
	r := draftScenario(t, "malformed_json", nil, "")
	if r.out.Status != StatusProven || r.out.Rounds != 2 || r.validations != 1 {
		t.Fatalf("outcome %s rounds %d validations %d (%s)", r.out.Status, r.out.Rounds, r.validations, r.out.Reason)
	}
	fb := r.srv.Requests()[1].LastUser()
	if !strings.Contains(fb, "could not be read") || !strings.Contains(fb, "does not decode") {
		t.Errorf("feedback:\n%s", fb)
	}
}

func TestSchemaIgnoredFencedFallback(t *testing.T) {
	r := draftScenario(t, "schema_ignored", nil, "")
	if r.out.Status != StatusProven || r.out.Rounds != 1 {
		t.Fatalf("outcome %s rounds %d (%s)", r.out.Status, r.out.Rounds, r.out.Reason)
	}
	if a := r.out.Attempts[0]; a.Read != ReadFenced {
		t.Errorf("attempt read %q, want fenced", a.Read)
	}
	if rf := r.srv.Requests()[0].Body["response_format"]; rf == nil {
		t.Error("the request did not ask for structured output")
	}
}

func TestSchemaRefusedRetriedWithout(t *testing.T) {
	r := draftScenario(t, "schema_refused", nil, "")
	if r.out.Status != StatusProven {
		t.Fatalf("outcome %s (%s)", r.out.Status, r.out.Reason)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 2 || reqs[0].Body["response_format"] == nil || reqs[1].Body["response_format"] != nil {
		t.Fatalf("requests: %d; want one with response_format then one without", len(reqs))
	}
}

func TestRateLimitedRetryAfter(t *testing.T) {
	start := time.Now()
	r := draftScenario(t, "rate_limited", nil, "")
	if r.out.Status != StatusProven {
		t.Fatalf("outcome %s (%s)", r.out.Status, r.out.Reason)
	}
	if n := len(r.srv.Requests()); n != 2 {
		t.Errorf("%d HTTP requests, want 2 (429 then the reply)", n)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("finished in %s: Retry-After: 1 was not honoured", el)
	}
	if r.out.Usage.Calls != 1 {
		t.Errorf("calls %d: a transport retry is one call", r.out.Usage.Calls)
	}
}

func TestRateLimitedGivesUpWithStatus(t *testing.T) {
	srv := llmtest.New(t, root, llmtest.Script{Steps: []llmtest.Step{{Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfter: "0"}}})
	c, err := NewClient(Settings{BaseURL: srv.URL(), Model: "m", Retries: 1, Timeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), []Message{{Role: "user", Content: "hi"}}, Sampling{})
	if StatusCode(err) != 429 {
		t.Fatalf("err %v (status %d), want the server's 429 kept", err, StatusCode(err))
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (1 retry)", n)
	}
}

func TestHungResponseCutByDeadline(t *testing.T) {
	start := time.Now()
	r := draftScenario(t, "hung_stream", func(s *Settings) { s.Timeout = 1500 * time.Millisecond }, "")
	el := time.Since(start)
	if r.out.Status != StatusError || !strings.Contains(r.out.Reason, "deadline") {
		t.Fatalf("outcome %s (%s)", r.out.Status, r.out.Reason)
	}
	if el > 15*time.Second {
		t.Errorf("took %s; the per-call deadline is 1.5s", el)
	}
	if r.validations != 0 {
		t.Errorf("validated %d times", r.validations)
	}
}

func TestStreamedWrongThenRight(t *testing.T) {
	r := draftScenario(t, "wrong_then_right", func(s *Settings) { s.Stream = true }, "")
	if r.out.Status != StatusProven || r.out.Rounds != 2 || r.out.Usage.Tokens() != 300 {
		t.Fatalf("outcome %s rounds %d usage %+v (%s)", r.out.Status, r.out.Rounds, r.out.Usage, r.out.Reason)
	}
	body := r.srv.Requests()[0].Body
	so, _ := body["stream_options"].(map[string]any)
	if body["stream"] != true || so["include_usage"] != true {
		t.Errorf("stream %v stream_options %v", body["stream"], body["stream_options"])
	}
}

func TestHungStreamCutByIdleWatchdog(t *testing.T) {
	start := time.Now()
	r := draftScenario(t, "hung_stream", func(s *Settings) { s.Stream, s.IdleTimeout, s.Timeout = true, time.Second, time.Minute }, "")
	el := time.Since(start)
	if r.out.Status != StatusError || !strings.Contains(r.out.Reason, "sent nothing for 1s") {
		t.Fatalf("outcome %s (%s)", r.out.Status, r.out.Reason)
	}
	if el > 15*time.Second {
		t.Errorf("took %s; the idle watchdog is 1s", el)
	}
}

func TestSnoopingDraftRefused(t *testing.T) {
	r := draftScenario(t, "snooping", nil, "")
	if r.out.Status != StatusProven || r.validations != 1 {
		t.Fatalf("outcome %s validations %d (%s)", r.out.Status, r.validations, r.out.Reason)
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
	if first.out.Status != StatusProven || first.out.Usage.Calls != 2 {
		t.Fatalf("first run %s, %d calls", first.out.Status, first.out.Usage.Calls)
	}
	// Same kernel, endpoint, model and settings; the server has nothing to say.
	first.srv.Reset(llmtest.Load(t, root, "hung_stream"))
	again := draftOn(t, first.srv, nil, dir)
	if !again.out.Cached || again.out.Status != StatusProven || again.out.Rounds != 2 {
		t.Fatalf("second run: cached %v %s rounds %d", again.out.Cached, again.out.Status, again.out.Rounds)
	}
	if n := len(again.srv.Requests()); n != 0 || again.out.Usage.Calls != 0 || again.validations != 0 {
		t.Fatalf("cache hit made %d requests, %d calls, %d validations", n, again.out.Usage.Calls, again.validations)
	}
	// A changed sampling parameter misses both caches.
	first.srv.Reset(llmtest.Load(t, root, "wrong_then_right"))
	other := draftOn(t, first.srv, func(s *Settings) { s.Seed = 99 }, dir)
	if other.out.Cached || len(other.srv.Requests()) != 2 {
		t.Errorf("changed seed: cached %v, %d requests", other.out.Cached, len(other.srv.Requests()))
	}
	// --no-cache bypasses reads.
	first.srv.Reset(llmtest.Load(t, root, "wrong_then_right"))
	nc := draftOn(t, first.srv, func(s *Settings) { s.NoCache = true }, dir)
	if nc.out.Cached || len(nc.srv.Requests()) != 2 {
		t.Errorf("--no-cache: cached %v, %d requests", nc.out.Cached, len(nc.srv.Requests()))
	}
}

func TestBestOfKFirstProvenWins(t *testing.T) {
	r := draftScenario(t, "best_of_k", func(s *Settings) { s.Samples, s.Concurrency, s.Rounds = 2, 2, 2 }, "")
	if r.out.Status != StatusProven {
		t.Fatalf("outcome %s (%s)", r.out.Status, r.out.Reason)
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
	if r.out.Usage.Calls < 2 {
		t.Errorf("usage %+v: both samples' calls count", r.out.Usage)
	}
}

func TestRequestBodyTemperatureZeroSent(t *testing.T) {
	srv := llmtest.New(t, root, llmtest.Script{Steps: []llmtest.Step{{Content: "ok"}}})
	c, err := NewClient(Settings{BaseURL: srv.URL(), Model: "m", Timeout: 5 * time.Second, Seed: 7}, prompts.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), []Message{{Role: "user", Content: "hi"}}, Sampling{Seed: 7, MaxTokens: 321}); err != nil {
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
	c, err := NewClient(Settings{BaseURL: srv.URL(), Model: "m", Timeout: 5 * time.Second, Budget: 250}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, err := c.Chat(context.Background(), []Message{{Role: "user", Content: "x"}}, Sampling{})
		if (i < 2) != (err == nil) || (i == 2 && !errors.Is(err, ErrBudget)) {
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
	c, err := NewClient(Settings{BaseURL: srv.URL(), Model: "m", Timeout: 5 * time.Second, RPM: 60}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 7 { // burst 6, then one per second
		if _, err := c.Chat(context.Background(), []Message{{Role: "user", Content: "x"}}, Sampling{}); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 800*time.Millisecond {
		t.Errorf("7 calls at 60 RPM (burst 6) took %s", el)
	}
}

func TestNoEndpoint(t *testing.T) {
	s, err := Resolve(configLLM(), Flags{}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ok, fix := s.Configured()
	if ok || !strings.Contains(fix, EnvBaseURL) || strings.Contains(fix, "\n") {
		t.Fatalf("configured %v fix %q", ok, fix)
	}
	if _, _, err := New(s, nil); !errors.Is(err, ErrNoEndpoint) {
		t.Fatalf("New: %v", err)
	}
	d := NeedsLLM(fix)
	if d.Verdict != "needs-llm" || d.Reason != fix {
		t.Errorf("%+v", d)
	}
}

func TestGateOnFixtureCandidates(t *testing.T) {
	py := needPython(t)
	fx, err := validators.LoadFixtures(filepath.Join(root, "fixtures", "kernels"))
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{Python: py}
	var items []GateItem
	var names []string
	for _, f := range fx {
		code, err := os.ReadFile(f.Candidate)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, GateItem{Code: code, Class: f.Spec.Class, Name: f.Spec.Name})
		names = append(names, f.Name)
	}
	good := len(items)
	bad := []struct{ code, want string }{
		{"def run(args, *, interpret):\n    return {\n", "syntax error"},
		{"import jax\n", "no top-level `def run"},
		{"from jax.experimental import pallas as pl\npl.pallas_call(None, None, grid_spex=1)\ndef run(args, *, interpret):\n    pass\n", "no keyword argument 'grid_spex'"},
		{"import jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    return jnp.cumsum(args['x']), pl.pallas_call\n", "call to jax.numpy.cumsum"},
		{"import subprocess\nfrom jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    pl.pallas_call\n", "import of 'subprocess'"},
		{"from jax.experimental.pallas import tpu as pltpu\nx = pltpu.VMEMx\ndef run(args, *, interpret):\n    pass\n", "pltpu.VMEMx does not exist"},
		{"from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import BlockSpecs\ndef run(args, *, interpret):\n    pl.pallas_call\n", "BlockSpecs does not exist"},
		{"import jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef run(args, interpret):\n    jnp.dot(1, 2, precison=None); pl.pallas_call\n", "no keyword argument 'precison'"},
	}
	for _, b := range bad {
		items = append(items, GateItem{Code: []byte(b.code), Class: "scan", Name: "scan_kernel"})
	}
	res, err := g.CheckAll(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		if !res[i].OK() {
			t.Errorf("%s: proven candidate refused by the gate:\n%s", names[i], res[i])
		}
	}
	for i, b := range bad {
		r := res[good+i]
		if r.OK() || !strings.Contains(r.String(), b.want) {
			t.Errorf("gate on %q: %s; want %q", b.code, r, b.want)
		}
	}
	if !strings.Contains(res[len(res)-1].String(), "run must be declared exactly as") {
		t.Errorf("contract: %s", res[len(res)-1])
	}
}

func TestVerdictFeedbackNonNumericCarriesOutput(t *testing.T) {
	v := &validators.Verdict{Verdict: validators.Rejected, Reason: "V-COMPILE: candidate does not trace",
		Output: "Traceback (most recent call last):\n  File \"/tmp/pallasify-validate-123abc/candidate.py\", line 9\nValueError: block shape (7, 100) is not divisible"}
	f := VerdictFeedback(v)
	text, err := f.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "V-COMPILE") || !strings.Contains(text, "block shape (7, 100)") || !strings.Contains(text, "BEGIN validator output") ||
		!strings.Contains(text, `File "candidate.py", line 9`) {
		t.Errorf("feedback:\n%s", text)
	}
}

func TestOutcomeKeyChangesWithInputs(t *testing.T) {
	base := prompts.Kernel{Name: "k", Class: "elementwise", Source: "__global__ void k(){}", Spec: &kernels.Spec{ID: "a"}}
	d := &Drafter{Settings: Settings{BaseURL: "http://x/v1", Model: "m"}.withDefaults(), JAXVersion: "0.10.2"}
	k0 := d.OutcomeKey(base)
	changes := []func(*Drafter, *prompts.Kernel){
		func(_ *Drafter, k *prompts.Kernel) { k.Source += " " },
		func(_ *Drafter, k *prompts.Kernel) { k.Spec = &kernels.Spec{ID: "b"} },
		func(d *Drafter, _ *prompts.Kernel) { d.Settings.Model = "m2" },
		func(d *Drafter, _ *prompts.Kernel) { d.Settings.Seed++ },
		func(d *Drafter, _ *prompts.Kernel) { d.Settings.MaxTokens++ },
		func(d *Drafter, _ *prompts.Kernel) { d.Settings.Rounds++ },
	}
	for i, ch := range changes {
		dd, k := *d, base
		ch(&dd, &k)
		if dd.OutcomeKey(k) == k0 {
			t.Errorf("change %d did not change the key", i)
		}
	}
	if d.OutcomeKey(base) != k0 {
		t.Error("key is not stable")
	}
}

func TestCacheAtomicRoundTrip(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	if err := c.Put("replies", Key("x"), Reply{Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	var r Reply
	if !c.Get("replies", Key("x"), &r) || r.Content != "hello" {
		t.Fatalf("got %+v", r)
	}
	c.NoRead = true
	if c.Get("replies", Key("x"), &r) {
		t.Error("NoRead still read")
	}
	var nilCache *Cache
	if nilCache.Get("replies", "k", &r) || nilCache.Put("replies", "k", r) != nil {
		t.Error("nil cache")
	}
}

func configLLM() config.LLMConfig { return config.Defaults().LLM }
