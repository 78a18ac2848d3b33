package deliver_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline/acquire"
	"github.com/pallasify/pallasify/pipeline/deliver"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
)

// A push remote that accepts and then says nothing fails the delivery with
// ACQ-TIMEOUT after NetTimeout; before, migrate --push hung for ever.
func TestPushToSilentRemoteTimesOut(t *testing.T) {
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
			defer c.Close()
		}
	}()
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(1))
	ctx := context.Background()
	src, err := acquire.Open(ctx, "file://"+bare, acquire.Options{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Cleanup()
	gittest.Git(t, src.Dir, "remote", "set-url", "origin", "http://"+ln.Addr().String()+"/acme/train.git")
	run, err := gittest.Migrate(ctx, src.Dir)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := deliver.Run(ctx, src, run, deliver.Options{Version: "9.9.9", Push: true, NetTimeout: 300 * time.Millisecond})
		res <- err
	}()
	select {
	case err := <-res:
		if err == nil || !strings.Contains(err.Error(), acquire.CodeTimeout+": ") {
			t.Fatalf("err %v, want %s", err, acquire.CodeTimeout)
		}
		t.Log(err)
	case <-time.After(30 * time.Second): // generous: the limit is 300ms
		t.Fatal("a push to a silent remote still running after 30s")
	}
}
