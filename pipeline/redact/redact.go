// Package redact keeps secrets out of logs, reports and error messages: a set
// of known secret values plus patterns of well-known token formats, applied by
// a slog ReplaceAttr hook and by an io.Writer wrapper.
package redact

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// tokenRE matches GitHub tokens, OpenAI-style keys and credentials in URLs.
var tokenRE = regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,})\b|(://[^/\s:@]+:)[^/\s@]+@`)

// sensitiveKey matches attribute names whose values are always secret.
var sensitiveKey = regexp.MustCompile(`(?i)(token|secret|password|passwd|authorization|api_?key|private_?key|credential)`)

// Secrets is a set of values to hide. The zero value is ready; it is safe for
// concurrent use.
type Secrets struct {
	mu   sync.RWMutex
	vals []string
}

// Add registers secret values (values shorter than 6 bytes are ignored: they
// would mask ordinary words).
func (s *Secrets) Add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if len(v) < 6 {
			continue
		}
		dup := false
		for _, o := range s.vals {
			dup = dup || o == v
		}
		if !dup {
			s.vals = append(s.vals, v)
		}
	}
	// Longest first, so a secret containing another is masked whole.
	sort.Slice(s.vals, func(i, j int) bool { return len(s.vals[i]) > len(s.vals[j]) })
}

// String returns v with every secret masked.
func (s *Secrets) String(v string) string {
	if s != nil {
		s.mu.RLock()
		for _, sec := range s.vals {
			if strings.Contains(v, sec) {
				v = strings.ReplaceAll(v, sec, Mask)
			}
		}
		s.mu.RUnlock()
	}
	return tokenRE.ReplaceAllStringFunc(v, func(m string) string {
		if strings.HasPrefix(m, "://") {
			return m[:strings.Index(m[3:], ":")+4] + Mask + "@"
		}
		return Mask
	})
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr hook.
func (s *Secrets) ReplaceAttr(groups []string, a slog.Attr) slog.Attr {
	if a.Key != slog.MessageKey && a.Key != slog.TimeKey && a.Key != slog.LevelKey && sensitiveKey.MatchString(a.Key) {
		return slog.String(a.Key, Mask)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.String(v.String()))
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, s.String(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, s.String(x.String()))
		case []string:
			out := make([]string, len(x))
			for i, e := range x {
				out[i] = s.String(e)
			}
			return slog.Any(a.Key, out)
		default:
			return slog.String(a.Key, s.String(fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// JSONLogger is a slog JSON logger whose output never contains a secret.
func (s *Secrets) JSONLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: s.ReplaceAttr}))
}

// Writer wraps w so every Write is masked. Secrets split across two writes
// are not caught: use it for line- or document-sized writes.
func (s *Secrets) Writer(w io.Writer) io.Writer { return &writer{s: s, w: w} }

type writer struct {
	s *Secrets
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.s.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
