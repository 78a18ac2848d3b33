package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/validators"
)

// Outcome statuses (pipeline.Draft.Verdict values).
const (
	StatusProven   = "proven"
	StatusRejected = "rejected"
	StatusError    = "error"
	StatusNeedsLLM = "needs-llm"
)

// Job is one kernel to draft.
type Job struct {
	Kernel prompts.Kernel
	// Validate proves a candidate against the original kernel (the caller
	// builds the reference once). An error means validation could not run.
	Validate func(ctx context.Context, candidate []byte) (*validators.Verdict, error)
}

// Attempt is one round of one sample.
type Attempt struct {
	Sample int    `json:"sample"`
	Round  int    `json:"round"`
	Stage  string `json:"stage"` // call, unreadable, gate, verdict
	Result string `json:"result"`
	Read   string `json:"read,omitempty"` // json or fenced
}

// Outcome is what drafting one kernel produced.
type Outcome struct {
	Status  string              `json:"status"`
	Reason  string              `json:"reason,omitempty"`
	Code    string              `json:"code,omitempty"` // the proven (or last validated) module
	Verdict *validators.Verdict `json:"verdict,omitempty"`
	// Rounds used by the winning sample (or the most by any sample).
	Rounds   int           `json:"rounds"`
	Usage    Usage         `json:"usage"`
	Attempts []Attempt     `json:"attempts"`
	Duration time.Duration `json:"duration_ns"`
	// Cached is true when the whole outcome came from the cache (no call).
	Cached bool `json:"-"`
}

// PipelineDraft converts the outcome for the run model.
func (o *Outcome) PipelineDraft() *pipeline.Draft {
	d := &pipeline.Draft{Drafter: "llm", Verdict: o.Status, Reason: o.Reason, Rounds: o.Rounds,
		Tokens: o.Usage.Tokens(), Calls: o.Usage.Calls, CostUSD: o.Usage.CostUSD, Duration: o.Duration}
	if o.Verdict != nil {
		st := o.Verdict.ErrorStats()
		d.Stats = &st
		d.Shapes = o.Verdict.ShapeStrings()
	}
	return d
}

// NeedsLLM is the draft of a kernel that needs an LLM when none is configured.
func NeedsLLM(fix string) *pipeline.Draft {
	return &pipeline.Draft{Drafter: "none", Verdict: StatusNeedsLLM, Reason: fix}
}

// Gater is the static gate (tests may fake it).
type Gater interface {
	Check(ctx context.Context, code []byte, cls, name string) (*GateResult, error)
}

// Drafter runs the repair loop: prompt → reply → parse → static gate →
// validator, feeding every failure back as the next turn, for up to
// Settings.Rounds rounds per sample and Settings.Samples samples (best-of-k,
// Settings.Concurrency at once). The first proven draft wins.
type Drafter struct {
	Chat     Chatter
	Settings Settings
	Gate     Gater
	// JAXVersion is the pinned jax (validators.PinnedJAX()).
	JAXVersion string
	Cache      *Cache
}

// OutcomeKey is the cache key of a kernel's outcome: its closure and spec,
// the model and endpoint, the prompt version, the sampling and loop settings,
// and the validator's harness version.
func (d *Drafter) OutcomeKey(k prompts.Kernel) string {
	s := d.Settings
	return Key("outcome/1", k.Source, k.Spec, k.Class, k.Name, s.BaseURL, s.Model, prompts.Hash(),
		s.Seed, s.MaxTokens, s.SampleTemperature, s.Rounds, s.Samples, validators.HarnessHash(), d.JAXVersion)
}

// Draft drafts one kernel. The error is non-nil only when ctx ends.
func (d *Drafter) Draft(ctx context.Context, job Job) (*Outcome, error) {
	start := time.Now()
	s := d.Settings.withDefaults()
	key := d.OutcomeKey(job.Kernel)
	var cached Outcome
	if d.Cache.Get("outcomes", key, &cached) {
		cached.Cached = true
		cached.Usage = Usage{}
		cached.Duration = time.Since(start)
		return &cached, nil
	}
	sys, err := prompts.System(d.JAXVersion)
	if err != nil {
		return &Outcome{Status: StatusError, Reason: err.Error()}, nil
	}
	user, err := prompts.User(job.Kernel)
	if err != nil {
		return &Outcome{Status: StatusError, Reason: err.Error()}, nil
	}
	first := []Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		results []*Outcome
		winner  *Outcome
	)
	p := pool.New().WithMaxGoroutines(max(1, min(s.Concurrency, s.Samples)))
	for i := range s.Samples {
		p.Go(func() {
			o := d.sample(sctx, s, job, i, slices.Clone(first))
			mu.Lock()
			defer mu.Unlock()
			results = append(results, o)
			if o.Status == StatusProven && winner == nil {
				winner = o
				cancel() // first proven wins: stop the other samples
			}
		})
	}
	p.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := pick(winner, results)
	for _, r := range results {
		out.Usage.Add(r.Usage)
		if r != out {
			out.Attempts = append(out.Attempts, r.Attempts...)
		}
	}
	slices.SortStableFunc(out.Attempts, func(a, b Attempt) int {
		if a.Sample != b.Sample {
			return a.Sample - b.Sample
		}
		return a.Round - b.Round
	})
	out.Duration = time.Since(start)
	if out.Status == StatusProven || out.Status == StatusRejected {
		if err := d.Cache.Put("outcomes", key, out); err != nil {
			out.Reason = strings.TrimSpace(out.Reason + " (" + err.Error() + ")")
		}
	}
	return out, nil
}

// pick chooses the outcome to report: the winner, else a rejection (the most
// informative), else the first error.
func pick(winner *Outcome, results []*Outcome) *Outcome {
	if winner != nil {
		c := *winner
		c.Attempts = slices.Clone(winner.Attempts)
		c.Usage = Usage{}
		return &c
	}
	var best *Outcome
	for _, r := range results {
		switch {
		case best == nil:
			best = r
		case r.Status == StatusRejected && best.Status != StatusRejected:
			best = r
		case r.Status == best.Status && r.Rounds > best.Rounds:
			best = r
		}
	}
	if best == nil {
		return &Outcome{Status: StatusError, Reason: "no sample ran"}
	}
	c := *best
	c.Attempts = slices.Clone(best.Attempts)
	c.Usage = Usage{}
	return &c
}

// sample runs the repair loop for sample i.
func (d *Drafter) sample(ctx context.Context, s Settings, job Job, i int, msgs []Message) *Outcome {
	sp := Sampling{Seed: s.Seed + i, MaxTokens: s.MaxTokens}
	if i > 0 {
		sp.Temperature = s.SampleTemperature
	}
	o := &Outcome{Status: StatusRejected}
	k := job.Kernel
	for round := 1; round <= s.Rounds; round++ {
		o.Rounds = round
		att := Attempt{Sample: i, Round: round}
		reply, err := d.chat(ctx, s, msgs, sp)
		o.Usage.Add(reply.Usage)
		if err != nil {
			if ctx.Err() != nil {
				o.Status, o.Reason = StatusError, "cancelled: "+ctx.Err().Error()
				return o
			}
			att.Stage, att.Result = "call", err.Error()
			o.Attempts = append(o.Attempts, att)
			o.Status, o.Reason = StatusError, "LLM call failed: "+err.Error()
			return o
		}
		msgs = append(msgs, Message{Role: "assistant", Content: reply.Content})
		var fb prompts.Feedback
		code, how, perr := ParseReply(reply.Content)
		att.Read = how
		switch {
		case perr != nil:
			att.Stage, att.Result = "unreadable", perr.Error()
			fb = prompts.Feedback{Kind: prompts.KindUnreadable, Detail: strings.TrimPrefix(perr.Error(), ErrUnreadable.Error()+": ")}
			o.Reason = "L-UNREADABLE: " + att.Result
		default:
			g, gerr := d.Gate.Check(ctx, []byte(code), k.Class, k.Name)
			if gerr != nil {
				if ctx.Err() != nil {
					o.Status, o.Reason = StatusError, "cancelled: "+ctx.Err().Error()
					return o
				}
				att.Stage, att.Result = "gate", gerr.Error()
				o.Attempts = append(o.Attempts, att)
				o.Status, o.Reason = StatusError, "static gate could not run: "+gerr.Error()
				return o
			}
			if !g.OK() {
				att.Stage, att.Result = "gate", g.String()
				fb = prompts.Feedback{Kind: prompts.KindGate, JAXVersion: d.JAXVersion, Detail: g.String()}
				o.Reason = "L-GATE: " + firstLine(g.String())
				break
			}
			o.Code = code // only drafts that reach the validator are kept
			v, verr := job.Validate(ctx, []byte(code))
			if verr != nil {
				if ctx.Err() != nil {
					o.Status, o.Reason = StatusError, "cancelled: "+ctx.Err().Error()
					return o
				}
				att.Stage, att.Result = "verdict", verr.Error()
				o.Attempts = append(o.Attempts, att)
				o.Status, o.Reason = StatusError, "validation could not run: "+verr.Error()
				return o
			}
			o.Verdict = v
			att.Stage, att.Result = "verdict", v.Verdict+" "+v.Reason
			if v.Proven() {
				att.Result = v.Verdict
				o.Attempts = append(o.Attempts, att)
				o.Status, o.Reason = StatusProven, ""
				return o
			}
			if v.Verdict == validators.Error {
				// The validator could not decide (reference failed, degenerate
				// test): not the draft's fault, and another round cannot help.
				o.Attempts = append(o.Attempts, att)
				o.Status, o.Reason = StatusError, v.Reason
				return o
			}
			o.Reason = v.Reason
			fb = VerdictFeedback(v)
		}
		o.Attempts = append(o.Attempts, att)
		if round == s.Rounds {
			break
		}
		next, err := fb.Render()
		if err != nil {
			o.Status, o.Reason = StatusError, err.Error()
			return o
		}
		msgs = append(msgs, Message{Role: "user", Content: next})
	}
	o.Status = StatusRejected
	o.Reason = fmt.Sprintf("%s (after %d rounds)", o.Reason, o.Rounds)
	return o
}

// chat answers from the reply cache or calls the model (and caches).
func (d *Drafter) chat(ctx context.Context, s Settings, msgs []Message, sp Sampling) (Reply, error) {
	key := Key("reply/1", s.BaseURL, s.Model, prompts.Hash(), sp, msgs)
	var r Reply
	if d.Cache.Get("replies", key, &r) {
		r.Cached, r.Usage = true, Usage{}
		return r, nil
	}
	r, err := d.Chat.Chat(ctx, msgs, sp)
	if err != nil {
		return r, err
	}
	_ = d.Cache.Put("replies", key, r) // a cache write failure only costs a call next time
	return r, nil
}

// VerdictFeedback turns a rejection into the next turn's facts: the reason,
// the first failing case (shape, seed, distribution, errors, first
// mismatching indices), the statistics and, for errors that are not
// numeric, the tail of the validator's output (trace or compile errors).
func VerdictFeedback(v *validators.Verdict) prompts.Feedback {
	f := prompts.Feedback{Kind: prompts.KindVerdict, Reason: v.Reason}
	for _, c := range v.Cases {
		if c.Mismatches == 0 && c.NaNMaskOK {
			continue
		}
		sizes, _ := json.Marshal(c.Sizes)
		f.Case = fmt.Sprintf("output %s, sizes %s, seed %d, %s inputs: %d mismatches, max abs %.3g, max rel %.3g, ULP max %.0f, NaN/Inf mask ok %v",
			c.Output, sizes, c.Seed, c.Distribution, c.Mismatches, c.MaxAbs, c.MaxRel, c.ULPMax, c.NaNMaskOK)
		if len(c.FirstMismatches) > 0 {
			idx, _ := json.Marshal(c.FirstMismatches)
			f.Case += ", first mismatching indices " + string(idx)
		}
		break
	}
	if v.Stats.Cases > 0 {
		f.Stats = fmt.Sprintf("%d cases: max abs %.3g, max rel %.3g, ULP p50 %.0f p99 %.0f max %.0f, %d mismatches",
			v.Stats.Cases, v.Stats.MaxAbs, v.Stats.MaxRel, v.Stats.ULPP50, v.Stats.ULPP99, v.Stats.ULPMax, v.Stats.Mismatches)
	}
	switch v.Code() {
	case "V-MISMATCH", "V-NAN":
	default:
		f.Detail = scrubPaths(lastLines(v.Output, 30, 2500))
	}
	return f
}

func lastLines(s string, n, maxBytes int) string {
	s = strings.TrimSpace(s)
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s = strings.Join(lines, "\n")
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
	}
	return s
}

// workPathRE matches the validator's per-run work directories, which would
// make otherwise identical feedback (and so the reply cache key) differ.
var workPathRE = regexp.MustCompile(`(?:/[\w.-]+)*/pallasify-[\w]+-[\w]+/`)

func scrubPaths(s string) string { return workPathRE.ReplaceAllString(s, "") }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// ErrNoEndpoint is returned by New when no endpoint is configured; the
// message is the one-line fix.
var ErrNoEndpoint = errors.New("no LLM endpoint configured")

// New builds a drafter for s: the client (retrying transport, rate limits),
// the static gate with the validator's Python and the disk cache.
func New(s Settings, gate *Gate) (*Drafter, *Client, error) {
	if ok, fix := s.Configured(); !ok {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoEndpoint, fix)
	}
	c, err := NewClient(s, prompts.Schema())
	if err != nil {
		return nil, nil, err
	}
	if gate == nil {
		gate = &Gate{}
	}
	d := &Drafter{Chat: c, Settings: c.Settings(), Gate: gate, JAXVersion: validators.PinnedJAX(),
		Cache: &Cache{Dir: s.CacheDir, NoRead: s.NoCache}}
	return d, c, nil
}
