package queue

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestPostgresSilentServerFails: a PostgreSQL URL whose server accepts the
// connection and never answers fails Open with an error (it hung before:
// no connect timeout). The default connectTimeout is shortened to keep the
// test short; the URL names none.
func TestPostgresSilentServerFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	defer func(d time.Duration) { connectTimeout = d }(connectTimeout)
	connectTimeout = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		q, err := Open(ctx, Config{URL: "postgres://u:p@" + ln.Addr().String() + "/db?sslmode=disable"})
		if q != nil {
			q.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "queue") {
			t.Errorf("Open against a silent server: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open against a silent PostgreSQL server hung")
	}
}
