package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
)

// DrafterName is the drafter name recorded with LLM drafts.
const DrafterName = "llm"

// Drafter is the LLM drafter (draft.Drafter). Each sample of a kernel is one
// conversation: round 1 sends the system prompt and the kernel; every later
// round sends the draft stage's feedback on the previous reply (unreadable,
// refused by the static gate, or rejected by the validator) as the next user
// turn. Sample 0 is greedy; later samples use Settings.SampleTemperature.
// It is safe for concurrent use.
type Drafter struct {
	Chat     Chatter
	Settings Settings
	// JAXVersion is the pinned jax the prompts name (validators.PinnedJAX()).
	JAXVersion string
	Cache      *Cache
	// Root is the tree the kernels were found in (launch sites are read
	// from it).
	Root string

	mu    sync.Mutex
	convs map[convKey][]Message
}

type convKey struct {
	kernel string
	sample int
}

var _ draft.Drafter = (*Drafter)(nil)

// Name implements draft.Drafter.
func (d *Drafter) Name() string { return DrafterName }

// Budget implements draft.Drafter: Settings.Samples conversations of
// Settings.Rounds rounds, Settings.Concurrency at once.
func (d *Drafter) Budget() draft.Budget {
	s := d.Settings.withDefaults()
	return draft.Budget{Samples: s.Samples, Rounds: s.Rounds, Parallel: max(1, min(s.Concurrency, s.Samples))}
}

// Draft implements draft.Drafter: one model call, the reply read into a
// candidate module (or, when it cannot be read, a candidate that says why).
func (d *Drafter) Draft(ctx context.Context, k *kernels.Kernel, t draft.Turn) (*draft.Candidate, error) {
	return d.draft(ctx, k, t, func() ([]Message, error) { return d.cudaPrompt(k) })
}

// draft is one turn of k's conversation; first renders round 1's messages.
func (d *Drafter) draft(ctx context.Context, k *kernels.Kernel, t draft.Turn, first func() ([]Message, error)) (*draft.Candidate, error) {
	if k.Spec == nil {
		return nil, fmt.Errorf("llm: no KernelSpec: write %s", kernels.UserSpecPath(k.ID))
	}
	s := d.Settings.withDefaults()
	msgs, err := d.messages(k, t, first)
	if err != nil {
		return nil, err
	}
	sp := Sampling{Seed: s.Seed + t.Sample, MaxTokens: s.MaxTokens}
	if t.Sample > 0 {
		sp.Temperature = s.SampleTemperature
	}
	reply, err := d.chat(ctx, s, msgs, sp)
	if err != nil {
		return nil, fmt.Errorf("llm: LLM call failed: %w", err)
	}
	d.remember(k.ID, t.Sample, append(msgs, Message{Role: "assistant", Content: reply.Content}))
	class := k.Class
	if k.Spec.Class != "" {
		class = k.Spec.Class
	}
	c := &draft.Candidate{Drafter: DrafterName, Class: class, Untrusted: true,
		Tokens: reply.Usage.Tokens(), Calls: reply.Usage.Calls, CostUSD: reply.Usage.CostUSD}
	if reply.Cached {
		c.Notes = append(c.Notes, "llm: cached reply")
	}
	code, how, perr := ParseReply(reply.Content)
	if perr != nil {
		c.Unreadable = strings.TrimPrefix(perr.Error(), ErrUnreadable.Error()+": ")
		return c, nil
	}
	c.Module = code
	c.Notes = append(c.Notes, "llm: reply read as "+how)
	return c, nil
}

// cudaPrompt is round 1 of a CUDA kernel's conversation.
func (d *Drafter) cudaPrompt(k *kernels.Kernel) ([]Message, error) {
	sys, err := prompts.System(d.JAXVersion)
	if err != nil {
		return nil, err
	}
	user, err := prompts.User(FromKernel(d.Root, k))
	if err != nil {
		return nil, err
	}
	return []Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}, nil
}

// messages is the conversation to send for turn t of kernel k (first:
// round 1's).
func (d *Drafter) messages(k *kernels.Kernel, t draft.Turn, first func() ([]Message, error)) ([]Message, error) {
	if t.Round <= 1 || t.Feedback == nil {
		return first()
	}
	d.mu.Lock()
	prev := d.convs[convKey{k.ID, t.Sample}]
	d.mu.Unlock()
	if prev == nil {
		return nil, fmt.Errorf("llm: round %d of sample %d of %s without its earlier rounds", t.Round, t.Sample, k.Name)
	}
	next, err := d.feedback(*t.Feedback).Render()
	if err != nil {
		return nil, err
	}
	return append(append([]Message(nil), prev...), Message{Role: "user", Content: next}), nil
}

func (d *Drafter) remember(kernel string, sample int, msgs []Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.convs == nil {
		d.convs = map[convKey][]Message{}
	}
	d.convs[convKey{kernel, sample}] = msgs
}

// feedback is the stage's feedback as the prompt's next turn.
func (d *Drafter) feedback(f draft.Feedback) prompts.Feedback {
	pf := prompts.Feedback{Reason: f.Reason, Case: f.Case, Stats: f.Stats, Detail: f.Detail}
	switch f.Kind {
	case draft.KindUnreadable:
		pf.Kind = prompts.KindUnreadable
	case draft.KindGate:
		pf.Kind, pf.JAXVersion = prompts.KindGate, d.JAXVersion
	default:
		pf.Kind = prompts.KindVerdict
	}
	return pf
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

// ErrNoEndpoint is returned by New when no endpoint is configured; the
// message is the one-line fix.
var ErrNoEndpoint = errors.New("no LLM endpoint configured")

// New builds a drafter for s drafting kernels found under root: the client
// (retrying transport, rate limits) and the disk cache. jaxVersion is the
// pinned jax the prompts name.
func New(s Settings, root, jaxVersion string) (*Drafter, *Client, error) {
	if ok, fix := s.Configured(); !ok {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoEndpoint, fix)
	}
	c, err := NewClient(s, prompts.Schema())
	if err != nil {
		return nil, nil, err
	}
	d := &Drafter{Chat: c, Settings: c.Settings(), JAXVersion: jaxVersion, Root: root,
		Cache: &Cache{Dir: s.CacheDir, NoRead: s.NoCache}}
	return d, c, nil
}
