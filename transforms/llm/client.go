package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/time/rate"
)

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"` // system, user, assistant
	Content string `json:"content"`
}

// Usage counts tokens and calls.
type Usage struct {
	Calls            int     `json:"calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// Tokens is prompt plus completion tokens.
func (u Usage) Tokens() int { return u.PromptTokens + u.CompletionTokens }

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.Calls += o.Calls
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.CostUSD += o.CostUSD
}

// Sampling are the parameters that change a reply (part of the cache key).
type Sampling struct {
	Temperature float32 `json:"temperature"`
	Seed        int     `json:"seed"`
	MaxTokens   int     `json:"max_tokens"`
}

// Reply is one completion.
type Reply struct {
	Content string `json:"content"`
	Usage   Usage  `json:"usage"`
	// Structured is true when the request asked for the JSON schema.
	Structured bool `json:"structured"`
	// Cached is true when the reply came from the disk cache.
	Cached bool `json:"-"`
}

// Chatter is what the repair loop needs from a client (tests may fake it).
type Chatter interface {
	Chat(ctx context.Context, msgs []Message, sp Sampling) (Reply, error)
}

// Client calls an OpenAI-compatible chat completions endpoint. Retries on
// 429/5xx (honouring Retry-After) happen in the HTTP transport so the final
// error keeps its status and body; a rate limiter bounds requests and tokens
// per minute; usage is totalled. Safe for concurrent use.
type Client struct {
	s      Settings
	oa     *openai.Client
	reqLim *rate.Limiter
	tokLim *rate.Limiter
	schema json.RawMessage

	mu       sync.Mutex
	usage    Usage
	noSchema bool // the server refused response_format json_schema
}

// NewClient builds a client for s (which must be Configured). schema is the
// JSON schema asked for as structured output (nil: plain text).
func NewClient(s Settings, schema json.RawMessage) (*Client, error) {
	if ok, fix := s.Configured(); !ok {
		return nil, errors.New("llm: " + fix)
	}
	s = s.withDefaults()
	key := s.APIKey
	if key == "" {
		key = "none" // local servers ignore the key but the header must not be empty
	}
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.BaseURL
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	rc.RetryMax = s.Retries
	rc.RetryWaitMin = 500 * time.Millisecond
	rc.RetryWaitMax = 30 * time.Second
	rc.Backoff = func(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
		d := retryablehttp.DefaultBackoff(min, max, attempt, resp)
		if d > 2*time.Minute {
			d = 2 * time.Minute
		}
		return d
	}
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	cfg.HTTPClient = rc.StandardClient()
	c := &Client{s: s, oa: openai.NewClientWithConfig(cfg), schema: schema,
		reqLim: rate.NewLimiter(rate.Inf, 1), tokLim: rate.NewLimiter(rate.Inf, 1)}
	if s.RPM > 0 {
		c.reqLim = rate.NewLimiter(rate.Limit(float64(s.RPM)/60), max(1, s.RPM/10))
	}
	if s.TPM > 0 {
		c.tokLim = rate.NewLimiter(rate.Limit(float64(s.TPM)/60), s.TPM)
	}
	return c, nil
}

// Settings returns the client's settings.
func (c *Client) Settings() Settings { return c.s }

// Usage returns the totals so far.
func (c *Client) Usage() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usage
}

// ErrSchemaUnsupported is wrapped when the server refuses structured output
// (the client then retries once without it and remembers).
var ErrSchemaUnsupported = errors.New("server refused response_format json_schema")

// ErrBudget is returned once the run's token budget is spent.
var ErrBudget = errors.New("the run's LLM token budget is spent")

// Chat sends one completion request under the per-call deadline.
func (c *Client) Chat(ctx context.Context, msgs []Message, sp Sampling) (Reply, error) {
	if b := c.s.Budget; b > 0 {
		if used := c.Usage().Tokens(); used >= b {
			return Reply{}, fmt.Errorf("llm: %w (%d of %d tokens; %s)", ErrBudget, used, b, EnvBudget)
		}
	}
	if err := c.wait(ctx, msgs, sp); err != nil {
		return Reply{}, err
	}
	c.mu.Lock()
	structured := c.schema != nil && !c.noSchema
	c.mu.Unlock()
	r, err := c.call(ctx, msgs, sp, structured)
	if structured && err != nil && schemaRefused(err) {
		c.mu.Lock()
		c.noSchema = true
		c.mu.Unlock()
		r, err = c.call(ctx, msgs, sp, false)
	}
	return r, err
}

func (c *Client) wait(ctx context.Context, msgs []Message, sp Sampling) error {
	if err := c.reqLim.Wait(ctx); err != nil {
		return fmt.Errorf("llm: rate limit: %w", err)
	}
	n := sp.MaxTokens
	for _, m := range msgs {
		n += len(m.Content)/4 + 4
	}
	if b := c.tokLim.Burst(); c.tokLim.Limit() != rate.Inf && n > b {
		n = b
	}
	if err := c.tokLim.WaitN(ctx, n); err != nil {
		return fmt.Errorf("llm: token budget: %w", err)
	}
	return nil
}

// Request builds the wire request (exported for tests of the JSON body).
func (c *Client) Request(msgs []Message, sp Sampling, structured bool) openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: c.s.Model}
	for _, m := range msgs {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	// go-openai drops a zero temperature (omitempty) and the server default
	// (often 0.7-1.0) applies: send the smallest non-zero float instead.
	t := sp.Temperature
	if t <= 0 {
		t = math.SmallestNonzeroFloat32
	}
	req.Temperature = t
	seed := sp.Seed
	req.Seed = &seed
	if sp.MaxTokens > 0 {
		if strings.Contains(c.s.BaseURL, "api.openai.com") {
			req.MaxCompletionTokens = sp.MaxTokens
		} else {
			// vLLM, Ollama and llama.cpp read max_tokens; the OpenAI API alone
			// wants max_completion_tokens (above).
			//lint:ignore SA1019 the deprecated field is the one these servers read
			req.MaxTokens = sp.MaxTokens
		}
	}
	if structured {
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name: "pallas_draft", Schema: c.schema, Strict: true,
			},
		}
	}
	return req
}

func (c *Client) call(ctx context.Context, msgs []Message, sp Sampling, structured bool) (Reply, error) {
	cctx, cancel := context.WithTimeout(ctx, c.s.Timeout)
	defer cancel()
	start := time.Now()
	if c.s.Stream {
		return c.stream(ctx, cctx, cancel, msgs, sp, structured, start)
	}
	resp, err := c.oa.CreateChatCompletion(cctx, c.Request(msgs, sp, structured))
	u := Usage{Calls: 1}
	if err != nil {
		c.add(u)
		return Reply{}, c.callErr(ctx, cctx, err, start, false)
	}
	u.PromptTokens, u.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
	u.CostUSD = (float64(u.PromptTokens)*c.s.PriceIn + float64(u.CompletionTokens)*c.s.PriceOut) / 1e6
	c.add(u)
	if len(resp.Choices) == 0 {
		return Reply{Usage: u, Structured: structured}, fmt.Errorf("llm: %s: reply has no choices", c.s.BaseURL)
	}
	return Reply{Content: resp.Choices[0].Message.Content, Usage: u, Structured: structured}, nil
}

// stream reads a streamed reply, cutting it when no chunk arrives for
// IdleTimeout (a stalled server) or when the per-call deadline passes.
func (c *Client) stream(ctx, cctx context.Context, cancel context.CancelFunc, msgs []Message, sp Sampling, structured bool, start time.Time) (Reply, error) {
	req := c.Request(msgs, sp, structured)
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	u := Usage{Calls: 1}
	st, err := c.oa.CreateChatCompletionStream(cctx, req)
	if err != nil {
		c.add(u)
		return Reply{}, c.callErr(ctx, cctx, err, start, false)
	}
	defer st.Close()
	var idle atomic.Bool
	watchdog := time.AfterFunc(c.s.IdleTimeout, func() { idle.Store(true); cancel() })
	defer watchdog.Stop()
	var b strings.Builder
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			c.add(u)
			return Reply{}, c.callErr(ctx, cctx, err, start, idle.Load())
		}
		watchdog.Reset(c.s.IdleTimeout)
		if chunk.Usage != nil {
			u.PromptTokens, u.CompletionTokens = chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens
		}
		for _, ch := range chunk.Choices {
			if ch.Index == 0 {
				b.WriteString(ch.Delta.Content)
			}
		}
	}
	u.CostUSD = (float64(u.PromptTokens)*c.s.PriceIn + float64(u.CompletionTokens)*c.s.PriceOut) / 1e6
	c.add(u)
	return Reply{Content: b.String(), Usage: u, Structured: structured}, nil
}

// callErr explains a failed call: a stalled stream, the per-call deadline,
// or the server's error (status and body kept).
func (c *Client) callErr(ctx, cctx context.Context, err error, start time.Time, idle bool) error {
	el := time.Since(start).Round(time.Millisecond)
	switch {
	case idle && ctx.Err() == nil:
		return fmt.Errorf("llm: the stream sent nothing for %s (after %s): %w", c.s.IdleTimeout, el, context.DeadlineExceeded)
	case cctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("llm: no reply within the %s per-call deadline (after %s): %w", c.s.Timeout, el, context.DeadlineExceeded)
	}
	return fmt.Errorf("llm: %s: %w", c.s.BaseURL, err)
}

func (c *Client) add(u Usage) {
	c.mu.Lock()
	c.usage.Add(u)
	c.mu.Unlock()
}

// schemaRefused reports whether err is a 400 about response_format.
func schemaRefused(err error) bool {
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &ae):
		return ae.HTTPStatusCode == http.StatusBadRequest &&
			(strings.Contains(strings.ToLower(ae.Message), "response_format") || strings.Contains(strings.ToLower(ae.Message), "json_schema"))
	case errors.As(err, &re):
		b := strings.ToLower(string(re.Body))
		return re.HTTPStatusCode == http.StatusBadRequest && (strings.Contains(b, "response_format") || strings.Contains(b, "json_schema"))
	}
	return false
}

// StatusCode returns the HTTP status of an API error (0 when none).
func StatusCode(err error) int {
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &ae):
		return ae.HTTPStatusCode
	case errors.As(err, &re):
		return re.HTTPStatusCode
	}
	return 0
}
