package llm

import (
	"strings"
	"testing"
	"time"
)

func TestResolvePrecedence(t *testing.T) {
	cfg := Config{BaseURL: "http://cfg:8000/v1", Model: "cfg-model", APIKeyEnv: "CFG_KEY", MaxRounds: 3, Timeout: time.Minute}
	tests := []struct {
		name               string
		cfg                Config
		fl                 Flags
		env                map[string]string
		wantURL, wantModel string
		wantKey            string
		wantRounds         int
		wantOK             bool
		wantErr            string
	}{
		{name: "config", cfg: cfg, wantURL: "http://cfg:8000/v1", wantModel: "cfg-model", wantRounds: 3, wantOK: true},
		{name: "env over config", cfg: cfg, env: map[string]string{EnvBaseURL: "http://env:11434/v1/", EnvModel: "llama", "CFG_KEY": "k1"},
			wantURL: "http://env:11434/v1", wantModel: "llama", wantKey: "k1", wantRounds: 3, wantOK: true},
		{name: "flags over env", cfg: cfg, fl: Flags{BaseURL: "http://flag/v1", Model: "f", Rounds: 6, KeyEnv: "MINE"},
			env:     map[string]string{EnvBaseURL: "http://env/v1", EnvModel: "e", "MINE": "k2"},
			wantURL: "http://flag/v1", wantModel: "f", wantKey: "k2", wantRounds: 6, wantOK: true},
		{name: "key alone means OpenAI", env: map[string]string{EnvKey: "sk", EnvModel: "gpt-x"},
			wantURL: OpenAIBaseURL, wantModel: "gpt-x", wantKey: "sk", wantRounds: DefaultRounds, wantOK: true},
		{name: "nothing configured", wantRounds: DefaultRounds},
		{name: "no model", env: map[string]string{EnvBaseURL: "http://localhost:8000/v1"}, wantURL: "http://localhost:8000/v1", wantRounds: DefaultRounds},
		{name: "disabled", cfg: cfg, fl: Flags{NoLLM: true}, wantURL: "http://cfg:8000/v1", wantModel: "cfg-model", wantRounds: 3},
		{name: "bad url", fl: Flags{BaseURL: "localhost:8000"}, wantErr: "base URL"},
		{name: "bad rpm", env: map[string]string{EnvRPM: "-1"}, wantErr: EnvRPM},
		{name: "bad price", env: map[string]string{EnvPrice: "3"}, wantErr: EnvPrice},
		{name: "too many rounds", fl: Flags{Rounds: 50}, wantErr: "rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Resolve(tt.cfg, tt.fl, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.BaseURL != tt.wantURL || s.Model != tt.wantModel || s.APIKey != tt.wantKey || s.Rounds != tt.wantRounds {
				t.Errorf("got url %q model %q key %q rounds %d", s.BaseURL, s.Model, s.APIKey, s.Rounds)
			}
			ok, fix := s.Configured()
			if ok != tt.wantOK || (!ok && fix == "") {
				t.Errorf("configured %v fix %q", ok, fix)
			}
			if strings.Contains(s.String(), "k1") || strings.Contains(s.String(), "k2") {
				t.Errorf("String leaks the key: %s", s)
			}
		})
	}
}

func TestResolvePrice(t *testing.T) {
	s, err := Resolve(Config{}, Flags{}, func(k string) string {
		return map[string]string{EnvPrice: "2.5, 10", EnvTPM: "1000", EnvRPM: "30"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.PriceIn != 2.5 || s.PriceOut != 10 || s.TPM != 1000 || s.RPM != 30 {
		t.Errorf("%+v", s)
	}
}
