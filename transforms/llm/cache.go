package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Cache is a content-addressed store on disk for replies, keyed by the
// whole request (endpoint, model, prompt version, sampling, conversation).
// Writes are atomic.
type Cache struct {
	Dir string
	// NoRead bypasses lookups (--no-cache); results are still written.
	NoRead bool
}

// DefaultCacheDir is where replies are cached.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pallasify", "llm")
}

// Key hashes parts (each JSON-encoded, length-prefixed).
func Key(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		b, _ := json.Marshal(p)
		fmt.Fprintf(h, "%d\n", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Cache) path(kind, key string) string {
	return filepath.Join(c.Dir, kind, key[:2], key+".json")
}

// Get decodes the entry into v; false when absent, unreadable or bypassed.
func (c *Cache) Get(kind, key string, v any) bool {
	if c == nil || c.Dir == "" || c.NoRead {
		return false
	}
	b, err := os.ReadFile(c.path(kind, key))
	if err != nil {
		return false
	}
	return json.Unmarshal(b, v) == nil
}

// Put stores v under key (temp file + rename).
func (c *Cache) Put(kind, key string, v any) error {
	if c == nil || c.Dir == "" {
		return nil
	}
	p := c.path(kind, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), key+".tmp*")
	if err != nil {
		return fmt.Errorf("llm cache: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("llm cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("llm cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("llm cache: %w", err)
	}
	return nil
}
