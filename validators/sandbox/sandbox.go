// Package sandbox runs untrusted code — a repository's CUDA compiled for the
// emulator, Python drafted by an LLM — under bubblewrap with least
// privilege: no network; only the system toolchain and library directories
// (/usr and its /bin, /lib links), the few /etc files the toolchain reads,
// the Python environment (the interpreter's venv and its base
// installation), paths the caller lists, all read-only; the work directory
// as the one writable place; and limits on CPU time, memory, file size,
// processes, the work directory's size and wall-clock time. Nothing of the
// user's home, the rest of /etc or other repositories is visible.
//
// Run as root, bubblewrap makes the mounts as root (so a Python installed
// under /root is reachable) and the sandboxed process then runs as an
// unprivileged user of its own (setpriv), so the process limit holds (the
// kernel exempts root from it). Run as any other user, the sandbox is an
// unprivileged user namespace where the limit counts its processes only. A
// watchdog also stops a sandbox whose processes reach the limit or whose
// work directory outgrows its size limit.
package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrUnavailable is returned when bubblewrap cannot run here and the caller
// did not allow running without a sandbox.
var ErrUnavailable = errors.New("sandbox unavailable")

// Limits bound one sandboxed process. Zero values mean "no limit" except
// Wall, Procs and DiskMB, which have defaults.
type Limits struct {
	CPUSeconds int           // RLIMIT_CPU
	MemoryMB   int           // RLIMIT_AS, in MiB
	FileMB     int           // RLIMIT_FSIZE, in MiB
	Wall       time.Duration // killed after this long (default 2 minutes)
	// Procs bounds the processes and threads of the sandbox (RLIMIT_NPROC
	// in its user namespace, and the watchdog; default DefaultProcs).
	Procs int
	// DiskMB bounds what the sandbox writes: the regular files under the
	// work directory plus the contents of its private /tmp and /dev/shm,
	// counted together by the watchdog (default DefaultDiskMB).
	DiskMB int
	// TmpMB bounds each of /tmp and /dev/shm, which live in the host's
	// memory: a hard limit (the tmpfs size; a write past it fails with
	// ENOSPC), default DefaultTmpMB, at most DiskMB.
	TmpMB int
}

// Defaults of the process and work-directory limits.
const (
	DefaultProcs  = 1024
	DefaultDiskMB = 4096
	DefaultTmpMB  = 512
	// maxFiles bounds the entries under the work directory (inodes).
	maxFiles = 200000
)

// Violation codes: the watchdog's reason for stopping a sandbox.
const (
	ViolationProcs = "SBX-PROCS"
	ViolationDisk  = "SBX-DISK"
	ViolationTime  = "SBX-TIME"
)

// Run as root, each sandbox gets a user id of its own in this range, so
// one sandbox's processes never count against another's limit.
const (
	sandboxUIDBase  = 200000
	sandboxUIDRange = 60000
)

// setpriv switches the sandboxed process to its user (util-linux).
const setpriv = "/usr/bin/setpriv"

// Sandbox describes how to run commands.
type Sandbox struct {
	// Disabled runs commands directly (the user passed --no-sandbox).
	Disabled bool
	// Bwrap is the bubblewrap binary; "" means look it up on PATH.
	Bwrap string
	// Env is the complete environment of the sandboxed process.
	Env []string
	// ReadOnly lists extra paths the process may read (anything else
	// outside the system directories, the Python environment and the work
	// directory is invisible). The Python environment of argv[0] and of
	// $PALLASIFY_PYTHON is exposed automatically.
	ReadOnly []string

	mu   sync.Mutex
	runs map[*exec.Cmd]*runState
}

// runState is what Violation needs to know about one command.
type runState struct {
	why            string          // the watchdog's reason, once it stopped the sandbox
	parent, walled context.Context // the caller's context, and it with the wall limit
	wall           time.Duration
	scratch        []*scratch // the sandbox's /tmp and /dev/shm, once attached
}

// Violation returns why a sandbox limit stopped cmd ("" when none did): a
// coded line such as "SBX-PROCS: 1024 processes, the sandbox's limit". Call
// it after cmd ended: it also tells a run killed at its wall limit
// (SBX-TIME) and one that failed with its /tmp or /dev/shm full (SBX-DISK).
func (s *Sandbox) Violation(cmd *exec.Cmd) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.runs[cmd]
	if st == nil {
		return ""
	}
	if st.why != "" {
		return st.why
	}
	if errors.Is(st.walled.Err(), context.DeadlineExceeded) && st.parent.Err() == nil {
		return fmt.Sprintf("%s: killed at the sandbox's wall limit (%s)", ViolationTime, st.wall)
	}
	if cmd.ProcessState != nil && !cmd.ProcessState.Success() {
		for _, sc := range st.scratch {
			if used, size, ok := sc.usage(); ok && size-used < 64<<10 {
				return fmt.Sprintf("%s: the sandbox's %s is full (its limit %d MiB)", ViolationDisk, sc.path, size>>20)
			}
		}
	}
	return ""
}

func (s *Sandbox) track(cmd *exec.Cmd, st *runState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs = map[*exec.Cmd]*runState{}
	}
	s.runs[cmd] = st
}

func (s *Sandbox) setViolation(cmd *exec.Cmd, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.runs[cmd]; st != nil && st.why == "" {
		st.why = why
	}
}

func (s *Sandbox) setScratch(cmd *exec.Cmd, sc []*scratch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.runs[cmd]; st != nil {
		st.scratch = sc
	}
}

// forget drops cmd's state and closes what holds its tmpfs mounts alive.
func (s *Sandbox) forget(cmd *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.runs[cmd]; st != nil {
		for _, sc := range st.scratch {
			sc.close()
		}
	}
	delete(s.runs, cmd)
}

// systemDirs are bound read-only when they exist (a symlink, as on merged-
// /usr systems, is recreated as the same symlink).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the /etc entries the toolchain reads: the dynamic loader's
// cache and configuration, and the alternatives links (cc, c++, ...).
var etcFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"}

// sysDirs are the /sys directories runtimes read to size themselves (the
// CPU and NUMA topology: tcmalloc in jaxlib and libtpu aborts without
// /sys/devices/system/cpu/possible); nothing else of /sys is visible.
var sysDirs = []string{"/sys/devices/system/cpu", "/sys/devices/system/node"}

// hidden are directories inside the bound system directories whose content
// is not toolchain: they are replaced by empty ones.
var hidden = []string{"/usr/local/src", "/usr/src"}

// exposed returns the paths outside the system directories and workdir that
// are bound read-only: the listed ones, and each Python environment the
// command may use — argv[0]'s and $PALLASIFY_PYTHON's virtual environment
// (bin/python beside pyvenv.cfg) with its base installation.
func (s *Sandbox) exposed(workdir string, argv0 string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		if underSystem(p) || p == workdir || strings.HasPrefix(p, workdir+"/") || strings.HasPrefix(workdir, p+"/") || seen[p] {
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
	for _, exe := range []string{argv0, os.Getenv("PALLASIFY_PYTHON")} {
		if !filepath.IsAbs(exe) {
			continue
		}
		exe = filepath.Clean(exe)
		env := filepath.Dir(filepath.Dir(exe))
		if cfg := filepath.Join(env, "pyvenv.cfg"); fileExists(cfg) {
			add(env)
			add(baseInstall(cfg))
			for _, d := range pthDirs(env) {
				add(d)
			}
			continue
		}
		add(exe)
		if real, err := filepath.EvalSymlinks(exe); err == nil && real != exe {
			add(filepath.Dir(filepath.Dir(real)))
		}
	}
	return out
}

// underSystem reports whether p is inside a bound system directory.
func underSystem(p string) bool {
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			for _, h := range hidden {
				if p == h || strings.HasPrefix(p, h+"/") {
					return false
				}
			}
			return true
		}
	}
	return false
}

// pthDirs are the absolute directories a venv's site-packages .pth files
// add to sys.path (one venv layered on another through a .pth line, as the
// corpus benchmark venv is on the project's): without them the sandboxed
// interpreter would not find what its own sys.path holds. Lines that run
// code ("import ...") are not paths.
func pthDirs(env string) []string {
	pths, _ := filepath.Glob(filepath.Join(env, "lib", "python3*", "site-packages", "*.pth"))
	var out []string
	for _, pth := range pths {
		data, err := os.ReadFile(pth)
		if err != nil || len(data) > 1<<16 {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if !filepath.IsAbs(line) || strings.HasPrefix(line, "import") {
				continue
			}
			if st, err := os.Stat(line); err == nil && st.IsDir() {
				out = append(out, filepath.Clean(line))
			}
		}
	}
	return out
}

// baseInstall is the installation a venv was made from: the parent of the
// "home" directory pyvenv.cfg names ("" when it cannot be read).
func baseInstall(cfg string) string {
	f, err := os.Open(cfg)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.TrimSpace(k) == "home" {
			home := filepath.Clean(strings.TrimSpace(v))
			if real, err := filepath.EvalSymlinks(home); err == nil {
				home = real
			}
			return filepath.Dir(home)
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// dropsRoot reports whether the sandboxed process runs as a user of its
// own: pallasify runs as root (where the kernel would not apply the process
// limit) and setpriv is there.
func dropsRoot() bool { return os.Geteuid() == 0 && fileExists(setpriv) }

// namespaces are the bubblewrap arguments that isolate the process. Run as
// root there is no user namespace (its one mapped user would be root, and
// setpriv could not leave it); setpriv needs CAP_SETUID and CAP_SETGID,
// which it drops with the user switch.
func namespaces(drop bool) []string {
	if drop {
		return []string{"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
			"--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"}
	}
	return []string{"--unshare-all"} // no network, own user/pid/ipc/uts/cgroup namespaces
}

// trivial starts a sandbox that runs true.
func (s *Sandbox) trivial(ctx context.Context) error {
	bw, err := s.bwrap()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	drop := dropsRoot()
	args := append(systemBinds(), "--proc", "/proc", "--dev", "/dev")
	args = append(append(args, namespaces(drop)...), "--die-with-parent", "--")
	if drop {
		args = append(args, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", "true")
	} else {
		args = append(args, "true")
	}
	cmd := exec.CommandContext(ctx, bw, args...)
	cmd.WaitDelay = 2 * time.Second // a process left holding the output pipe must not hang the check
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// started remembers, per bubblewrap binary and user mode, that a trivial
// sandbox started in this process; checkMu serialises the first checks, so
// drafts validated in parallel start one trivial sandbox, not one each.
var (
	checkMu sync.Mutex
	started = map[string]bool{}
)

// Check reports whether bubblewrap can start a trivial sandbox here, with
// the same user and namespaces Command uses.
func (s *Sandbox) Check(ctx context.Context) error {
	if s.Disabled {
		return nil
	}
	bw, err := s.bwrap()
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s|%v", bw, dropsRoot())
	checkMu.Lock()
	defer checkMu.Unlock()
	if started[key] {
		return nil
	}
	if err := s.trivial(ctx); err != nil {
		return fmt.Errorf("%w: bubblewrap failed to start: %v (install Debian's bubblewrap, allow unprivileged user namespaces, or pass --no-sandbox to run untrusted code unconfined)", ErrUnavailable, err)
	}
	started[key] = true
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

// systemBinds are the bubblewrap arguments exposing the system toolchain.
func systemBinds() []string {
	var args []string
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, h := range hidden {
		if fi, err := os.Stat(h); err == nil && fi.IsDir() {
			args = append(args, "--tmpfs", h)
		}
	}
	var extra []string
	for _, f := range append(append([]string{}, etcFiles...), sysDirs...) {
		if _, err := os.Stat(f); err == nil {
			extra = append(extra, f)
		}
	}
	// bubblewrap would create /etc and /sys as 0700: the sandbox user
	// could not reach the files bound below them.
	args = append(args, parentDirs(append(extra, "/etc/passwd"))...)
	for _, f := range extra {
		args = append(args, "--ro-bind", f, f)
	}
	return args
}

// Command prepares argv to run inside the sandbox with workdir as its only
// writable directory (also its current directory and $HOME and $TMPDIR).
// The caller runs it; ctx (plus Limits.Wall) kills it, and so does the
// watchdog (see Violation). Call the returned cancel when done.
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
	if lim.Procs <= 0 {
		lim.Procs = DefaultProcs
	}
	if lim.DiskMB <= 0 {
		lim.DiskMB = DefaultDiskMB
	}
	if lim.TmpMB <= 0 {
		lim.TmpMB = DefaultTmpMB
	}
	lim.TmpMB = min(lim.TmpMB, lim.DiskMB)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, wall)
	ulimits := "ulimit -c 0"
	if lim.CPUSeconds > 0 {
		ulimits += "; ulimit -t " + strconv.Itoa(lim.CPUSeconds)
	}
	if lim.MemoryMB > 0 {
		ulimits += "; ulimit -v " + strconv.Itoa(lim.MemoryMB*1024)
	}
	if lim.FileMB > 0 {
		// POSIX sh counts ulimit -f in 512-byte blocks (dash, and bash as sh).
		ulimits += "; ulimit -f " + strconv.Itoa(lim.FileMB*2048)
	}
	if !s.Disabled {
		// Counted per user namespace: only this sandbox's processes.
		ulimits += "; ulimit -p " + strconv.Itoa(lim.Procs)
	}
	drop := !s.Disabled && dropsRoot()
	uid := sandboxUIDBase + rand.IntN(sandboxUIDRange)
	run := `exec "$@"`
	if drop {
		run = fmt.Sprintf(`exec %s --reuid=%d --regid=%d --clear-groups -- "$@"`, setpriv, uid, uid)
	}
	inner := append([]string{"/bin/sh", "-c", ulimits + " || exit 125; " + run, "sandboxed"}, argv...)
	env := s.Env
	if env == nil {
		env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	}
	env = append(env, "HOME="+workdir, "TMPDIR="+workdir)
	if s.Disabled {
		cmd := exec.CommandContext(ctx, inner[0], inner[1:]...)
		cmd.Dir, cmd.Env, cmd.WaitDelay = workdir, env, 5*time.Second
		s.track(cmd, &runState{parent: parent, walled: ctx, wall: wall})
		var once sync.Once
		return cmd, func() { once.Do(func() { cancel(); s.forget(cmd) }) }, nil
	}
	bw, err := s.bwrap()
	if err != nil {
		cancel()
		return nil, nil, err
	}
	owner := os.Getuid()
	if drop {
		owner = uid
	}
	etc, err := identityFiles(owner)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if drop {
		if err := chownTree(workdir, uid); err != nil {
			cancel()
			os.RemoveAll(etc)
			return nil, nil, fmt.Errorf("sandbox: hand the work directory to the sandbox user: %w", err)
		}
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		cancel()
		os.RemoveAll(etc)
		return nil, nil, err
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		cancel()
		os.RemoveAll(etc)
		infoR.Close()
		infoW.Close()
		return nil, nil, err
	}
	sizes, err := tmpfsSizes(bw, lim.TmpMB)
	if err != nil {
		cancel()
		os.RemoveAll(etc)
		infoR.Close()
		infoW.Close()
		blockR.Close()
		blockW.Close()
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	args := systemBinds()
	args = append(args,
		"--ro-bind", filepath.Join(etc, "passwd"), "/etc/passwd",
		"--ro-bind", filepath.Join(etc, "group"), "/etc/group",
		"--dev", "/dev",
	)
	args = append(args, sizes.args("/dev/shm")...)
	args = append(args, "--proc", "/proc")
	args = append(args, sizes.args("/tmp")...)
	ro := s.exposed(workdir, argv[0])
	bound := append([]string{workdir}, ro...)
	args = append(args, parentDirs(bound)...)
	args = append(args, maskedRoots(bound)...)
	for _, p := range ro {
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, "--bind", workdir, workdir)
	args = append(args, namespaces(drop)...)
	args = append(args,
		"--die-with-parent",
		"--new-session",
		"--info-fd", "3",
		"--block-fd", "4",
		"--chdir", workdir,
		"--",
	)
	cmd := exec.CommandContext(ctx, bw, append(args, inner...)...)
	cmd.Dir = workdir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	cmd.ExtraFiles = []*os.File{infoW, blockR}
	s.track(cmd, &runState{parent: parent, walled: ctx, wall: wall})
	wd := &watchdog{sb: s, cmd: cmd, info: infoR, release: blockW, workdir: workdir, lim: lim, sizes: sizes, done: make(chan struct{})}
	go wd.run(ctx)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			infoR.Close()
			infoW.Close()
			blockR.Close()
			<-wd.done
			blockW.Close()
			s.forget(cmd)
			sizes.cleanup()
			os.RemoveAll(etc)
		})
	}
	return cmd, stop, nil
}

// parentDirs creates the directories above the bound paths as 0755:
// bubblewrap would copy each host directory's mode, and a 0700 parent
// (a temp dir, /root) would keep the sandbox user out of what is bound
// below it. Nothing of those directories' own content is visible.
func parentDirs(paths []string) []string {
	var args []string
	seen := map[string]bool{"/": true, "/tmp": true}
	for _, p := range paths {
		var chain []string
		for d := filepath.Dir(p); !seen[d] && !underSystem(d); d = filepath.Dir(d) {
			seen[d] = true
			chain = append(chain, d)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			args = append(args, "--perms", "0755", "--dir", chain[i])
		}
	}
	return args
}

// maskedRoots replaces the host's other top-level directories (/home,
// /root, /var, /opt, /srv, ...) by empty ones nobody may enter, so a
// sandboxed program that reaches for a host path is refused (EACCES: the
// harness reports V-SANDBOX) rather than told it does not exist. The
// parents of bound paths stay enterable (parentDirs), with nothing but the
// bound paths in them.
func maskedRoots(bound []string) []string {
	keep := map[string]bool{"/proc": true, "/dev": true, "/tmp": true, "/sys": true, "/etc": true}
	for _, d := range systemDirs {
		keep[d] = true
	}
	for _, p := range bound {
		if parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2); parts[0] != "" {
			keep["/"+parts[0]] = true
		}
	}
	ents, err := os.ReadDir("/")
	if err != nil {
		return nil
	}
	var args []string
	for _, e := range ents {
		p := "/" + e.Name()
		if e.IsDir() && !keep[p] {
			args = append(args, "--perms", "0000", "--dir", p)
		}
	}
	return args
}

// identityFiles writes the /etc/passwd and /etc/group the sandbox sees: the
// sandbox user alone, so tools that look up the current user work without
// the host's account list.
func identityFiles(uid int) (string, error) {
	dir, err := os.MkdirTemp("", "pallasify-sbx-etc-")
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	passwd := fmt.Sprintf("sandbox:x:%d:%d:pallasify sandbox:/tmp:/bin/sh\n", uid, uid)
	group := fmt.Sprintf("sandbox:x:%d:\n", uid)
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(passwd), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("sandbox: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "group"), []byte(group), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("sandbox: %w", err)
	}
	os.Chmod(dir, 0o755)
	return dir, nil
}

// chownTree hands dir and everything under it to uid, so the unprivileged
// sandbox user can write its work directory.
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// watchdog stops a sandbox that reaches its process limit or whose work
// directory outgrows its size limit: it finds the sandbox's first process
// from bubblewrap's --info-fd and polls its pid namespace and the work
// directory until the command ends.
type watchdog struct {
	sb      *Sandbox
	cmd     *exec.Cmd
	info    *os.File
	release *os.File // writing to it lets the sandboxed command start (--block-fd)
	workdir string
	lim     Limits
	sizes   tmpfsSize
	done    chan struct{}
}

func (w *watchdog) run(ctx context.Context) {
	defer close(w.done)
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(w.info).Decode(&info); err != nil || info.ChildPID <= 0 {
		return // the sandbox did not start, or ended
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", info.ChildPID))
	scratch := w.sizes.attach(ctx, info.ChildPID)
	w.sb.setScratch(w.cmd, scratch)
	w.release.Write([]byte{1}) // the command starts now, its /tmp and /dev/shm held
	if err != nil {
		return
	}
	outer := parentPID(info.ChildPID)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		tasks, alive := nsTasks(ns)
		if !alive {
			return
		}
		if tasks >= w.lim.Procs-2 {
			w.stop(outer, info.ChildPID, syscall.SIGKILL, fmt.Sprintf("%s: %d processes and threads, the sandbox's limit (%d)", ViolationProcs, tasks, w.lim.Procs))
			return
		}
		if n%4 == 0 { // the disk every 200 ms
			limit := int64(w.lim.DiskMB) << 20
			var tmp int64
			var tmpFiles int
			for _, sc := range scratch {
				used, size, _ := sc.usage()
				if used > size {
					w.stop(outer, info.ChildPID, syscall.SIGXFSZ, fmt.Sprintf("%s: the sandbox's %s outgrew its limit of %d MiB",
						ViolationDisk, sc.path, size>>20))
					return
				}
				tmp += used
				tmpFiles += sc.files()
			}
			if bytes, files, over := dirUsage(w.workdir, limit-tmp, maxFiles-tmpFiles); over {
				w.stop(outer, info.ChildPID, syscall.SIGXFSZ, fmt.Sprintf("%s: the sandbox outgrew its write limit of %d MiB (%d MiB in %d files: the work directory, /tmp and /dev/shm)",
					ViolationDisk, w.lim.DiskMB, (bytes+tmp)>>20, files+tmpFiles))
				return
			}
		}
	}
}

// stop records why and kills the sandbox: bubblewrap itself (so the caller
// sees a signalled process) and its first process (whose end takes the pid
// namespace with it).
func (w *watchdog) stop(outer, child int, sig syscall.Signal, why string) {
	w.sb.setViolation(w.cmd, why)
	if outer > 1 {
		syscall.Kill(outer, sig)
	}
	syscall.Kill(child, syscall.SIGKILL)
	if outer > 1 {
		time.Sleep(100 * time.Millisecond)
		syscall.Kill(outer, syscall.SIGKILL)
	}
}

// parentPID reads a process's parent from /proc (0 when gone).
func parentPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) >= 2 {
			ppid, _ := strconv.Atoi(f[1])
			return ppid
		}
	}
	return 0
}

// nsTasks counts the tasks (threads) of the processes in pid namespace ns;
// alive is false when none is left.
func nsTasks(ns string) (tasks int, alive bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || l != ns {
			continue
		}
		alive = true
		if t, err := os.ReadDir("/proc/" + e.Name() + "/task"); err == nil {
			tasks += len(t)
		} else {
			tasks++
		}
	}
	return tasks, alive
}

// dirUsage adds up the sizes of the regular files under dir, stopping as
// soon as they pass limit bytes or maxEntries entries.
func dirUsage(dir string, limit int64, maxEntries int) (bytes int64, files int, over bool) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		files++
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				bytes += fi.Size()
			}
		}
		if bytes > limit || files > maxEntries {
			over = true
			return filepath.SkipAll
		}
		return nil
	})
	return bytes, files, over
}

// Run runs argv in the sandbox and returns its combined output. A sandbox
// the watchdog stopped returns an error starting with its violation code.
func (s *Sandbox) Run(ctx context.Context, workdir string, lim Limits, argv ...string) ([]byte, error) {
	cmd, cancel, err := s.Command(ctx, workdir, lim, argv...)
	if err != nil {
		return nil, err
	}
	defer cancel()
	out, err := cmd.CombinedOutput()
	if why := s.Violation(cmd); why != "" {
		return out, fmt.Errorf("sandboxed process stopped: %s", why)
	}
	if err != nil && cmd.ProcessState != nil && !cmd.ProcessState.Exited() {
		err = fmt.Errorf("sandboxed process killed (%s): %w", cmd.ProcessState, err)
	}
	return out, err
}

// MkdirTemp makes a private work directory for one sandboxed job.
func MkdirTemp(pattern string) (string, error) {
	return os.MkdirTemp("", pattern)
}
