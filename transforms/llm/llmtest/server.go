// Package llmtest is a scripted OpenAI-compatible chat completions server for
// tests: each request gets the next step of a script (a reply wrapped as the
// JSON draft or a fenced block, raw text, an HTTP error with Retry-After, a
// hung response, a refusal of response_format), and every request body is
// recorded. Scripts live in fixtures/llm/<scenario>/script.json.
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Step is one scripted response.
type Step struct {
	// Status is the HTTP status (default 200). With a non-200 status Body is
	// sent (default an OpenAI-shaped error).
	Status     int    `json:"status,omitempty"`
	RetryAfter string `json:"retry_after,omitempty"`
	Body       string `json:"body,omitempty"`
	// Content is the assistant message; ContentFile reads it from a file
	// (relative to the repository root).
	Content     string `json:"content,omitempty"`
	ContentFile string `json:"content_file,omitempty"`
	// Wrap: json (the {"explanation","code"} object), fenced (prose and a
	// ```python block), raw (Content as is; the default).
	Wrap string `json:"wrap,omitempty"`
	// Hang sends the headers and part of the body, then stalls until the
	// client goes away.
	Hang bool `json:"hang,omitempty"`
	// RejectSchema answers 400 when the request asks for response_format.
	RejectSchema bool `json:"reject_schema,omitempty"`
	// Seed, when set, makes the step answer only requests with this seed
	// (best-of-k scripts); steps are otherwise taken in order.
	Seed *int `json:"seed,omitempty"`
}

// Script is a scenario.
type Script struct {
	Steps []Step `json:"steps"`
	// Usage per reply (default 100 prompt + 50 completion tokens).
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
}

// Request is one recorded request.
type Request struct {
	Body map[string]any
	Raw  []byte
}

// Messages returns the request's messages as (role, content) pairs.
func (r Request) Messages() [][2]string {
	var out [][2]string
	ms, _ := r.Body["messages"].([]any)
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		content, _ := mm["content"].(string)
		out = append(out, [2]string{role, content})
	}
	return out
}

// LastUser returns the content of the last user message.
func (r Request) LastUser() string {
	ms := r.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i][0] == "user" {
			return ms[i][1]
		}
	}
	return ""
}

// Server is a running scripted server.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   Script
	root     string
	next     int
	requests []Request
	done     chan struct{}
}

// Load reads fixtures/llm/<scenario>/script.json under root.
func Load(t testing.TB, root, scenario string) Script {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "fixtures", "llm", scenario, "script.json"))
	if err != nil {
		t.Fatalf("llmtest: %v", err)
	}
	var s Script
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("llmtest: %s: %v", scenario, err)
	}
	return s
}

// New starts a server for script; content files are read under root. The
// server is closed when the test ends.
func New(t testing.TB, root string, script Script) *Server {
	t.Helper()
	s := &Server{script: script, root: root, done: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.done)
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
	return s
}

// URL is the base URL to configure (…/v1).
func (s *Server) URL() string { return s.Server.URL + "/v1" }

// Reset replaces the script and forgets the recorded requests (the URL
// stays, so caches keyed by endpoint still apply).
func (s *Server) Reset(script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.next, s.requests = script, 0, nil
}

// Requests returns the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var raw []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		raw = append(raw, buf[:n]...)
		if err != nil {
			break
		}
	}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Body: body, Raw: raw})
	step, ok := s.take(body)
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusInternalServerError, "script exhausted")
		return
	}
	if step.RejectSchema && body["response_format"] != nil {
		writeError(w, http.StatusBadRequest, "response_format json_schema is not supported by this server")
		return
	}
	if step.Status != 0 && step.Status != http.StatusOK {
		if step.RetryAfter != "" {
			w.Header().Set("Retry-After", step.RetryAfter)
		}
		if step.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(step.Status)
			fmt.Fprint(w, step.Body)
			return
		}
		writeError(w, step.Status, http.StatusText(step.Status))
		return
	}
	if body["stream"] == true {
		s.serveStream(w, r, step, body)
		return
	}
	if step.Hang {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"id":"hung","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	content, err := s.content(step)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	pt, ct := s.usage()
	resp := map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": body["model"],
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (s *Server) usage() (int, int) {
	pt, ct := s.script.PromptTokens, s.script.CompletionTokens
	if pt == 0 && ct == 0 {
		pt, ct = 100, 50
	}
	return pt, ct
}

// serveStream answers a stream request with server-sent events: the content
// in chunks, a usage chunk, [DONE]. A Hang step sends one chunk and stalls.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, step Step, body map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush()
	}
	chunk := func(text string) map[string]any {
		return map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}}}}
	}
	if step.Hang {
		send(chunk("{\"explanation\": \""))
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	content, err := s.content(step)
	if err != nil {
		send(map[string]any{"error": map[string]any{"message": err.Error()}})
		return
	}
	for len(content) > 0 {
		n := min(64, len(content))
		send(chunk(content[:n]))
		content = content[n:]
	}
	pt, ct := s.usage()
	send(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush()
}

// take returns the next step for a request (by seed when steps name one).
func (s *Server) take(body map[string]any) (Step, bool) {
	seed := -1
	if f, ok := body["seed"].(float64); ok {
		seed = int(f)
	}
	for i := s.next; i < len(s.script.Steps); i++ {
		st := s.script.Steps[i]
		if st.Seed != nil && *st.Seed != seed {
			continue
		}
		if i == s.next {
			s.next++
		} else {
			// Consume out of order: remove the step.
			s.script.Steps = append(s.script.Steps[:i:i], s.script.Steps[i+1:]...)
		}
		return st, true
	}
	return Step{}, false
}

func (s *Server) content(st Step) (string, error) {
	text := st.Content
	if st.ContentFile != "" {
		b, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(st.ContentFile)))
		if err != nil {
			return "", err
		}
		text = string(b)
	}
	switch st.Wrap {
	case "json":
		b, err := json.Marshal(map[string]string{"explanation": "A Pallas port of the kernel.", "code": text})
		return string(b), err
	case "fenced":
		return "Here is the Pallas module:\n\n```python\n" + strings.TrimRight(text, "\n") + "\n```\n\nIt tiles the array into (8, 128) blocks.", nil
	}
	return text, nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": status}})
	_, _ = w.Write(b)
}
