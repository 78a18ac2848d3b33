package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	var s Secrets
	s.Add("hunter2-very-secret", "abc") // "abc" too short: ignored
	cases := []struct{ in, want string }{
		{"pw=hunter2-very-secret!", "pw=" + Mask + "!"},
		{"token ghs_abcdefghijklmnopqrstuv done", "token " + Mask + " done"},
		{"https://x-access-token:ghp_zzzzzzzzzzzzzzzzzzzzzz@github.com/o/r", "https://x-access-token:" + Mask + "@github.com/o/r"},
		{"https://user:pa55word@host/x", "https://user:" + Mask + "@host/x"},
		{"abc is fine", "abc is fine"},
	}
	for _, c := range cases {
		if got := s.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestJSONLogger(t *testing.T) {
	var s Secrets
	s.Add("s3cr3t-value-123")
	var buf bytes.Buffer
	log := s.JSONLogger(&buf, slog.LevelDebug)
	log.Info("pushing with s3cr3t-value-123", "token", "anything", "err", errors.New("auth s3cr3t-value-123 failed"),
		slog.Group("g", "url", "https://a:s3cr3t-value-123@h/x"), "list", []string{"s3cr3t-value-123"})
	out := buf.String()
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "anything") {
		t.Fatalf("secret in log: %s", out)
	}
	if strings.Count(out, Mask) < 5 {
		t.Fatalf("expected masks: %s", out)
	}
	var w bytes.Buffer
	s.Writer(&w).Write([]byte("x s3cr3t-value-123 y"))
	if w.String() != "x "+Mask+" y" {
		t.Fatalf("writer: %q", w.String())
	}
}
