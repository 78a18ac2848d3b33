package main

import (
	"bytes"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMStopsAnalyze: SIGTERM during `pallasify analyze` over files the
// rules take a while on ends the run within a few seconds with exit 130,
// from inside a file's rules (issue 32 item 6: before, a run went on for
// minutes after SIGTERM and only SIGKILL stopped it). The signal is real:
// sent to this process, where run's handler takes it.
func TestSIGTERMStopsAnalyze(t *testing.T) {
	root := t.TempDir()
	body := "import torch\n" + strings.Repeat("x = torch.zeros(3).cuda()\n", 100_000)
	for i := range 4 {
		if err := os.WriteFile(filepath.Join(root, "m"+string(rune('a'+i))+".py"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Should run's handler not be installed yet, the signal lands here
	// rather than killing the test binary.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGTERM)
	defer signal.Stop(guard)
	var out, errOut bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"analyze", root}, &streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	}()
	time.Sleep(3 * time.Second) // parsed; the rules run
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	select {
	case c := <-code:
		if c != 130 {
			t.Fatalf("exit %d after SIGTERM, want 130; stderr: %s", c, errOut.String())
		}
		t.Logf("exit 130 %v after SIGTERM: %s", time.Since(sent).Round(time.Millisecond), strings.TrimSpace(errOut.String()))
	case <-time.After(10 * time.Second):
		t.Fatal("analyze still running 10s after SIGTERM")
	}
}
