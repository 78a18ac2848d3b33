// Package llm is the LLM kernel drafter, the peer of the rule drafter
// (transforms/pallas): it drafts Pallas kernels with a model behind any
// OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server). It
// implements draft.Drafter: the draft stage (pipeline/draft.go) owns the
// repair loop — it gates and validates each draft and hands every failure
// back as the next turn, for up to Settings.Rounds rounds per sample and
// Settings.Samples samples (best-of-k). Replies are cached on disk by
// content, so a re-run of the same conversation makes no call.
package llm

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is the llm section of pallasify.yaml (pipeline/config.LLMConfig):
// the OpenAI-compatible endpoint used to draft kernels.
type Config struct {
	BaseURL     string        `yaml:"base_url" json:"base_url,omitempty"`
	Model       string        `yaml:"model" json:"model,omitempty"`
	APIKeyEnv   string        `yaml:"api_key_env" json:"api_key_env,omitempty"`
	MaxRounds   int           `yaml:"max_rounds" json:"max_rounds,omitempty"`
	Timeout     time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	MaxTokens   int           `yaml:"max_tokens" json:"max_tokens,omitempty"`
	Concurrency int           `yaml:"concurrency" json:"concurrency,omitempty"`
	Disabled    bool          `yaml:"disabled" json:"disabled,omitempty"`
}

// Environment variables read by Resolve.
const (
	EnvBaseURL = "PALLASIFY_LLM_BASE_URL"
	EnvModel   = "PALLASIFY_LLM_MODEL"
	EnvKey     = "OPENAI_API_KEY"
	// EnvRPM and EnvTPM bound requests and tokens per minute.
	EnvRPM = "PALLASIFY_LLM_RPM"
	EnvTPM = "PALLASIFY_LLM_TPM"
	// EnvPrice is "IN,OUT": USD per million prompt and completion tokens.
	EnvPrice = "PALLASIFY_LLM_PRICE"
	// EnvBudget caps the tokens one run may spend (prompt + completion).
	EnvBudget = "PALLASIFY_LLM_BUDGET"
)

// OpenAIBaseURL is used when a key is set and no base URL is.
const OpenAIBaseURL = "https://api.openai.com/v1"

// Defaults.
const (
	DefaultRounds    = 4
	DefaultTimeout   = 2 * time.Minute
	DefaultMaxTokens = 4096
	DefaultRetries   = 4
	DefaultSeed      = 1234
	// DefaultIdleTimeout cuts a streamed reply that stalls.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultSampleTemperature is used by samples after the first in best-of-k
	// (the first sample is greedy).
	DefaultSampleTemperature = 0.7
)

// Settings configure the client and the repair loop.
type Settings struct {
	BaseURL string
	Model   string
	// APIKey is the secret; KeyEnv names where it came from (for messages).
	APIKey string
	KeyEnv string
	// Timeout bounds one call (retries and Retry-After waits included).
	Timeout time.Duration
	// Stream asks for a streamed reply; IdleTimeout then cuts a stream that
	// sends nothing for that long (default 60 s), well before Timeout.
	Stream      bool
	IdleTimeout time.Duration
	MaxTokens   int
	// Rounds is the repair loop length per sample; Samples is k in best-of-k
	// and Concurrency how many samples run at once.
	Rounds      int
	Samples     int
	Concurrency int
	// Retries is the transport's retry count on 429/5xx and network errors.
	Retries int
	// RPM and TPM bound requests and tokens per minute (0: unbounded).
	RPM, TPM int
	// Budget caps the run's total tokens (0: none); once spent, calls fail.
	Budget int
	Seed   int
	// PriceIn/PriceOut are USD per million prompt/completion tokens (0: unknown).
	PriceIn, PriceOut float64
	// SampleTemperature is the temperature of samples after the first.
	SampleTemperature float32
	// Disabled turns LLM drafting off (config llm.disabled, --no-llm).
	Disabled bool
	// NoCache bypasses reading the reply cache.
	NoCache bool
	// CacheDir holds cached replies ("" disables the cache).
	CacheDir string
}

// Flags are the command-line overrides (zero values keep lower layers).
type Flags struct {
	BaseURL   string
	Model     string
	KeyEnv    string
	Rounds    int
	Samples   int
	Timeout   time.Duration
	MaxTokens int
	Stream    bool
	NoLLM     bool
	NoCache   bool
	CacheDir  string
}

// Resolve layers the settings: flags over environment over the config file
// over defaults. getenv reads the environment (tests pass a map's lookup).
func Resolve(cfg Config, fl Flags, getenv func(string) string) (Settings, error) {
	s := Settings{
		BaseURL: cfg.BaseURL, Model: cfg.Model, KeyEnv: cfg.APIKeyEnv,
		Timeout: cfg.Timeout, MaxTokens: cfg.MaxTokens, Rounds: cfg.MaxRounds,
		Concurrency: cfg.Concurrency, Disabled: cfg.Disabled,
		Retries: DefaultRetries, Seed: DefaultSeed, Samples: 1,
		SampleTemperature: DefaultSampleTemperature,
	}
	if v := getenv(EnvBaseURL); v != "" {
		s.BaseURL = v
	}
	if v := getenv(EnvModel); v != "" {
		s.Model = v
	}
	if fl.BaseURL != "" {
		s.BaseURL = fl.BaseURL
	}
	if fl.Model != "" {
		s.Model = fl.Model
	}
	if fl.KeyEnv != "" {
		s.KeyEnv = fl.KeyEnv
	}
	if s.KeyEnv == "" {
		s.KeyEnv = EnvKey
	}
	s.APIKey = getenv(s.KeyEnv)
	if fl.Rounds != 0 {
		s.Rounds = fl.Rounds
	}
	if fl.Samples != 0 {
		s.Samples = fl.Samples
	}
	if fl.Timeout != 0 {
		s.Timeout = fl.Timeout
	}
	if fl.MaxTokens != 0 {
		s.MaxTokens = fl.MaxTokens
	}
	s.Stream = s.Stream || fl.Stream
	s.Disabled = s.Disabled || fl.NoLLM
	s.NoCache = fl.NoCache
	s.CacheDir = fl.CacheDir
	var err error
	if s.RPM, err = envInt(getenv, EnvRPM); err != nil {
		return s, err
	}
	if s.TPM, err = envInt(getenv, EnvTPM); err != nil {
		return s, err
	}
	if s.Budget, err = envInt(getenv, EnvBudget); err != nil {
		return s, err
	}
	if v := getenv(EnvPrice); v != "" {
		in, out, ok := strings.Cut(v, ",")
		pi, e1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		po, e2 := strconv.ParseFloat(strings.TrimSpace(out), 64)
		if !ok || e1 != nil || e2 != nil || pi < 0 || po < 0 {
			return s, fmt.Errorf("llm: %s=%q: want IN,OUT (USD per million tokens)", EnvPrice, v)
		}
		s.PriceIn, s.PriceOut = pi, po
	}
	if s.BaseURL == "" && s.APIKey != "" {
		s.BaseURL = OpenAIBaseURL
	}
	if s.BaseURL != "" {
		u, err := url.Parse(s.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, fmt.Errorf("llm: base URL %q: want http(s)://host[:port]/v1", s.BaseURL)
		}
		s.BaseURL = strings.TrimRight(s.BaseURL, "/")
	}
	return s.withDefaults(), s.check()
}

func envInt(getenv func(string) string, name string) (int, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("llm: %s=%q: want a non-negative integer", name, v)
	}
	return n, nil
}

func (s Settings) withDefaults() Settings {
	if s.Rounds <= 0 {
		s.Rounds = DefaultRounds
	}
	if s.Samples <= 0 {
		s.Samples = 1
	}
	if s.Concurrency <= 0 {
		s.Concurrency = s.Samples
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxTokens <= 0 {
		s.MaxTokens = DefaultMaxTokens
	}
	if s.IdleTimeout <= 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	if s.Retries < 0 {
		s.Retries = 0
	}
	return s
}

func (s Settings) check() error {
	switch {
	case s.Rounds > 20:
		return fmt.Errorf("llm: %d rounds is more than 20", s.Rounds)
	case s.Samples > 16:
		return fmt.Errorf("llm: best-of-%d is more than 16 samples", s.Samples)
	}
	return nil
}

// Configured reports whether drafting can call a model; when not, fix is
// one line telling the user how to configure one.
func (s Settings) Configured() (ok bool, fix string) {
	switch {
	case s.Disabled:
		return false, "LLM drafting is off (--no-llm or llm.disabled); drop it and set " + EnvBaseURL + " and " + EnvModel + " to draft this kernel"
	case s.BaseURL == "":
		return false, "no LLM endpoint: set " + EnvBaseURL + "=http://localhost:11434/v1 and " + EnvModel + " (Ollama, vLLM, llama.cpp), or " + EnvKey + " and " + EnvModel + " for OpenAI, or pass --llm-base-url/--llm-model"
	case s.Model == "":
		return false, "no LLM model: set " + EnvModel + " (or --llm-model, or llm.model in pallasify.yaml) for " + s.BaseURL
	}
	return true, ""
}

// String describes the endpoint without the key.
func (s Settings) String() string {
	key := "no key"
	if s.APIKey != "" {
		key = "key from $" + s.KeyEnv
	}
	return fmt.Sprintf("%s model %s (%s)", s.BaseURL, s.Model, key)
}
