package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The sandbox's /tmp and /dev/shm are tmpfs mounts, in the host's memory:
// bubblewrap's --size (since 0.8.0) makes each a hard limit. Before the
// command starts (--block-fd), the watchdog opens a directory of each, so it
// can measure them while the command runs and after it ended (an open
// directory keeps a tmpfs alive once its namespace is gone).

// tmpfsMagic is statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// sizeFlag remembers, per bubblewrap binary, whether it has --size.
var (
	sizeMu   sync.Mutex
	sizeFlag = map[string]bool{}
)

func hasSizeFlag(bw string) bool {
	sizeMu.Lock()
	defer sizeMu.Unlock()
	if ok, seen := sizeFlag[bw]; seen {
		return ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bw, "--help").CombinedOutput()
	ok := strings.Contains(string(out), "--size")
	sizeFlag[bw] = ok
	return ok
}

// tmpfsSize is how the sandbox's /tmp and /dev/shm are made.
type tmpfsSize struct {
	sized bool             // bubblewrap has --size
	bytes map[string]int64 // per mount point: its size, unique to this sandbox
	host  string           // without --size: the host directory holding both
}

// tmpfsSizes sizes each mount mb MiB plus a random number of pages, so the
// watchdog tells the sandbox's mount from any other tmpfs of the host.
// Without --size, /tmp and /dev/shm are host directories (on disk, under
// host) that the watchdog measures by polling.
func tmpfsSizes(bw string, mb int) (tmpfsSize, error) {
	t := tmpfsSize{sized: hasSizeFlag(bw), bytes: map[string]int64{}}
	for _, p := range []string{"/tmp", "/dev/shm"} {
		t.bytes[p] = int64(mb)<<20 + int64(1+rand.IntN(255))*4096
	}
	if !t.sized {
		dir, err := os.MkdirTemp("", "pallasify-sbx-scratch-")
		if err != nil {
			return t, err
		}
		for _, p := range []string{"tmp", "shm"} {
			if err := os.Mkdir(dir+"/"+p, 0o777); err != nil {
				os.RemoveAll(dir)
				return t, err
			}
			os.Chmod(dir+"/"+p, 0o1777)
		}
		os.Chmod(dir, 0o755)
		t.host = dir
	}
	return t, nil
}

func (t tmpfsSize) hostDir(p string) string {
	if p == "/tmp" {
		return t.host + "/tmp"
	}
	return t.host + "/shm"
}

// args are bubblewrap's arguments mounting p.
func (t tmpfsSize) args(p string) []string {
	if !t.sized {
		return []string{"--bind", t.hostDir(p), p}
	}
	return []string{"--size", strconv.FormatInt(t.bytes[p], 10), "--perms", "01777", "--tmpfs", p}
}

// cleanup removes the host directories of the unsized form.
func (t tmpfsSize) cleanup() {
	if t.host != "" {
		os.RemoveAll(t.host)
	}
}

// attach finds the sandbox's mounts through /proc/PID/root once bubblewrap
// made them, and holds them (for the unsized form: their host directories).
func (t tmpfsSize) attach(ctx context.Context, pid int) []*scratch {
	var out []*scratch
	for _, p := range []string{"/tmp", "/dev/shm"} {
		if !t.sized {
			out = append(out, &scratch{path: p, host: t.hostDir(p), size: t.bytes[p]})
			continue
		}
		if d := waitTmpfs(ctx, pid, p, t.bytes[p]); d != nil {
			out = append(out, &scratch{path: p, dir: d, size: t.bytes[p]})
		}
	}
	return out
}

// waitTmpfs opens the sandbox's tmpfs at p (nil when it does not appear:
// the sandbox failed, or /proc/PID/root is not ours to read).
func waitTmpfs(ctx context.Context, pid int, p string, size int64) *os.File {
	path := "/proc/" + strconv.Itoa(pid) + "/root" + p
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(path, &st); err != nil {
			if errors.Is(err, fs.ErrNotExist) && procAlive(pid) {
				continue // bubblewrap is building the new root
			}
			return nil // the sandbox ended, or its root is not ours to read
		}
		if st.Type != tmpfsMagic || int64(st.Blocks)*st.Bsize != size {
			continue // not mounted yet: the host's /tmp
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		sc := &scratch{dir: f, size: size}
		if _, got, ok := sc.usage(); !ok || got != size {
			f.Close()
			continue
		}
		return f
	}
	return nil
}

func procAlive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// scratch is one of the sandbox's writable mounts besides the work
// directory.
type scratch struct {
	path string   // in the sandbox
	dir  *os.File // a directory of the tmpfs
	host string   // the unsized form: the host directory bound at path
	size int64    // its limit
}

// usage is the bytes the mount holds and its size.
func (s *scratch) usage() (used, size int64, ok bool) {
	if s.host != "" {
		b, _, _ := dirUsage(s.host, 1<<62, 1<<30)
		return b, s.size, true
	}
	var st syscall.Statfs_t
	var err error
	cerr := controlFd(s.dir, func(fd uintptr) { err = syscall.Fstatfs(int(fd), &st) })
	if cerr != nil || err != nil {
		return 0, 0, false
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, int64(st.Blocks) * st.Bsize, true
}

// files is the number of files and directories the mount holds.
func (s *scratch) files() int {
	if s.host != "" {
		_, n, _ := dirUsage(s.host, 1<<62, 1<<30)
		return n
	}
	var st syscall.Statfs_t
	var err error
	if controlFd(s.dir, func(fd uintptr) { err = syscall.Fstatfs(int(fd), &st) }) != nil || err != nil {
		return 0
	}
	return int(st.Files - st.Ffree)
}

func (s *scratch) close() {
	if s.dir != nil {
		s.dir.Close()
	}
}

// controlFd runs fn on f's descriptor, which a concurrent Close cannot
// release meanwhile.
func controlFd(f *os.File, fn func(uintptr)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(fn)
}
