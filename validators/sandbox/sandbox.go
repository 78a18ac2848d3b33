// Package sandbox runs untrusted code — a repository's CUDA compiled for the
// emulator, Python drafted by an LLM — under bubblewrap: no network, the
// system read-only, only its own work directory writable, and CPU-time,
// memory, file-size and wall-clock limits.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrUnavailable is returned when bubblewrap cannot run here and the caller
// did not allow running without a sandbox.
var ErrUnavailable = errors.New("sandbox unavailable")

// Limits bound one sandboxed process. Zero values mean "no limit" except Wall.
type Limits struct {
	CPUSeconds int           // RLIMIT_CPU
	MemoryMB   int           // RLIMIT_AS, in MiB
	FileMB     int           // RLIMIT_FSIZE, in MiB
	Wall       time.Duration // killed after this long (default 2 minutes)
}

// Sandbox describes how to run commands.
type Sandbox struct {
	// Disabled runs commands directly (the user passed --no-sandbox).
	Disabled bool
	// Bwrap is the bubblewrap binary; "" means look it up on PATH.
	Bwrap string
	// Env is the complete environment of the sandboxed process.
	Env []string
	// ReadOnly lists extra paths the process may read. The sandbox gets a
	// private, empty /tmp, so anything under /tmp it needs (a virtual
	// environment, a checkout) must be listed here; the Python environment
	// of argv[0] is exposed automatically.
	ReadOnly []string
}

// exposed returns the paths under /tmp, outside workdir, that must be bound
// read-only into the sandbox's private /tmp: the listed ones, and for an
// interpreter in a virtual environment (bin/python beside pyvenv.cfg) the
// whole environment.
func (s *Sandbox) exposed(workdir string, argv0 string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		if p != "/tmp" && !strings.HasPrefix(p, "/tmp/") {
			return // the rest of the system is bound read-only already
		}
		if p == workdir || strings.HasPrefix(p, workdir+"/") || strings.HasPrefix(workdir, p+"/") || seen[p] {
			return
		}
		if _, err := os.Stat(p); err != nil {
			return
		}
		seen[p] = true
		out = append(out, p)
	}
	for _, p := range s.ReadOnly {
		add(p)
	}
	if filepath.IsAbs(argv0) {
		exe := filepath.Clean(argv0)
		if env := filepath.Dir(filepath.Dir(exe)); fileExists(filepath.Join(env, "pyvenv.cfg")) {
			add(env)
		} else {
			add(exe)
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Check reports whether bubblewrap can start a trivial sandbox here.
func (s *Sandbox) Check(ctx context.Context) error {
	if s.Disabled {
		return nil
	}
	bw, err := s.bwrap()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bw, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-all", "--die-with-parent", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: bubblewrap failed to start: %v: %s (install Debian's bubblewrap, allow unprivileged user namespaces, or pass --no-sandbox to run untrusted code unconfined)", ErrUnavailable, err, out)
	}
	return nil
}

func (s *Sandbox) bwrap() (string, error) {
	if s.Bwrap != "" {
		return s.Bwrap, nil
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: bwrap not found on PATH (apt-get install bubblewrap, or pass --no-sandbox)", ErrUnavailable)
	}
	return p, nil
}

// Command prepares argv to run inside the sandbox with workdir as its only
// writable directory (also its current directory and $HOME and $TMPDIR).
// The caller runs it; ctx (plus Limits.Wall) kills it.
func (s *Sandbox) Command(ctx context.Context, workdir string, lim Limits, argv ...string) (*exec.Cmd, context.CancelFunc, error) {
	if len(argv) == 0 {
		return nil, nil, errors.New("sandbox: empty command")
	}
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return nil, nil, err
	}
	wall := lim.Wall
	if wall <= 0 {
		wall = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, wall)
	ulimits := "ulimit -c 0"
	if lim.CPUSeconds > 0 {
		ulimits += "; ulimit -t " + strconv.Itoa(lim.CPUSeconds)
	}
	if lim.MemoryMB > 0 {
		ulimits += "; ulimit -v " + strconv.Itoa(lim.MemoryMB*1024)
	}
	if lim.FileMB > 0 {
		ulimits += "; ulimit -f " + strconv.Itoa(lim.FileMB*1024)
	}
	inner := append([]string{"/bin/sh", "-c", ulimits + ` || exit 125; exec "$@"`, "sandboxed"}, argv...)
	env := s.Env
	if env == nil {
		env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	}
	env = append(env, "HOME="+workdir, "TMPDIR="+workdir)
	var cmd *exec.Cmd
	if s.Disabled {
		cmd = exec.CommandContext(ctx, inner[0], inner[1:]...)
	} else {
		bw, err := s.bwrap()
		if err != nil {
			cancel()
			return nil, nil, err
		}
		args := []string{
			"--ro-bind", "/", "/",
			"--dev", "/dev",
			"--proc", "/proc",
			"--tmpfs", "/tmp",
		}
		for _, p := range s.exposed(workdir, argv[0]) {
			args = append(args, "--ro-bind", p, p)
		}
		args = append(args,
			"--bind", workdir, workdir,
			"--unshare-all", // no network, own pid/ipc/uts namespaces
			"--die-with-parent",
			"--new-session",
			"--chdir", workdir,
			"--",
		)
		cmd = exec.CommandContext(ctx, bw, append(args, inner...)...)
	}
	cmd.Dir = workdir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	return cmd, cancel, nil
}

// Run runs argv in the sandbox and returns its combined output.
func (s *Sandbox) Run(ctx context.Context, workdir string, lim Limits, argv ...string) ([]byte, error) {
	cmd, cancel, err := s.Command(ctx, workdir, lim, argv...)
	if err != nil {
		return nil, err
	}
	defer cancel()
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState != nil && !cmd.ProcessState.Exited() {
		err = fmt.Errorf("sandboxed process killed (%s): %w", cmd.ProcessState, err)
	}
	return out, err
}

// MkdirTemp makes a private work directory for one sandboxed job.
func MkdirTemp(pattern string) (string, error) {
	return os.MkdirTemp("", pattern)
}
