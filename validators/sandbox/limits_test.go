package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/validators/sandbox"
)

// /tmp and /dev/shm live in the host's memory: each is bounded (a write
// past TmpMB fails), and the run that fails on it carries SBX-DISK (issue
// 32: a test wrote 4 GiB there and nothing stopped it).
func TestTmpAndShmAreBounded(t *testing.T) {
	sb := usable(t)
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		t.Run(strings.TrimPrefix(dir, "/"), func(t *testing.T) {
			script := "head -c 64000000 /dev/zero > " + dir + "/x; rc=$?; echo size $(wc -c < " + dir + "/x); exit $rc"
			out, err := sb.Run(context.Background(), t.TempDir(), sandbox.Limits{Wall: time.Minute, TmpMB: 8, DiskMB: 256}, "/bin/sh", "-c", script)
			if err == nil || !strings.Contains(err.Error(), sandbox.ViolationDisk) {
				t.Fatalf("64 MB into %s with an 8 MiB limit: err %v\n%s", dir, err, out)
			}
			if strings.Contains(string(out), "size 64000000") {
				t.Fatalf("%s took all 64 MB:\n%s", dir, out)
			}
		})
	}
}

// The work directory, /tmp and /dev/shm count together against DiskMB.
func TestWritesCountTogether(t *testing.T) {
	sb := usable(t)
	work := t.TempDir()
	script := "head -c 12000000 /dev/zero > /tmp/a && head -c 12000000 /dev/zero > /dev/shm/b && head -c 12000000 /dev/zero > c && sleep 20"
	out, err := sb.Run(context.Background(), work, sandbox.Limits{Wall: time.Minute, TmpMB: 16, DiskMB: 30}, "/bin/sh", "-c", script)
	if err == nil || !strings.Contains(err.Error(), sandbox.ViolationDisk) {
		t.Fatalf("36 MB over three writable places with a 30 MiB limit: err %v\n%s", err, out)
	}
}

// A file of exactly FileMB MiB can be written, one byte more cannot (the
// limit was half: POSIX sh's ulimit -f counts 512-byte blocks), in the
// sandbox and without it.
func TestFileSizeLimitIsExact(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		name := "sandboxed"
		sb := &sandbox.Sandbox{Disabled: disabled}
		if disabled {
			name = "unsandboxed"
		} else {
			sb = usable(t)
		}
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			out, err := sb.Run(context.Background(), work, sandbox.Limits{Wall: time.Minute, FileMB: 1},
				"/bin/sh", "-c", "head -c 1048576 /dev/zero > exact && echo exact-ok; head -c 1048577 /dev/zero > over; echo over-rc=$?")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(string(out), "exact-ok") || strings.Contains(string(out), "over-rc=0") {
				t.Fatalf("file size limit of 1 MiB:\n%s", out)
			}
			for f, want := range map[string]int64{"exact": 1 << 20, "over": 1 << 20} {
				fi, err := os.Stat(filepath.Join(work, f))
				if err != nil || fi.Size() != want {
					t.Errorf("%s: %v, %d bytes; want %d", f, err, sizeOf(fi), want)
				}
			}
		})
	}
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}

// A run killed at its wall limit says so with SBX-TIME; one the caller
// cancelled does not.
func TestWallLimitIsCoded(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		sb := &sandbox.Sandbox{Disabled: disabled}
		if !disabled {
			sb = usable(t)
		}
		_, err := sb.Run(context.Background(), t.TempDir(), sandbox.Limits{Wall: 2 * time.Second}, "/bin/sh", "-c", "sleep 60")
		if err == nil || !strings.Contains(err.Error(), sandbox.ViolationTime) {
			t.Errorf("disabled=%v: a run past its wall limit: %v", disabled, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = sb.Run(ctx, t.TempDir(), sandbox.Limits{Wall: time.Minute}, "/bin/sh", "-c", "sleep 60")
		cancel()
		if err == nil || strings.Contains(err.Error(), sandbox.ViolationTime) {
			t.Errorf("disabled=%v: a cancelled run: %v", disabled, err)
		}
	}
}
