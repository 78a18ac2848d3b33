package pipeline

import (
	"bufio"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/pallasify/pallasify/transforms/repofs"
)

// tracked is what git's index holds for a work tree: the tracked files and
// every directory above one, as slash-separated paths from the work tree's
// top. A tracked file is part of the project whatever .gitignore says (git
// keeps tracking it), so the walk keeps it.
type tracked struct {
	files map[string]bool
	dirs  map[string]bool
}

// readTracked reads the index of the git work tree at top; nil when there is
// none or it cannot be read (then .gitignore alone decides, as before).
func readTracked(top string) *tracked {
	gitDir := resolveGitDir(top)
	if gitDir == "" {
		return nil
	}
	f, err := repofs.OpenRegular(filepath.Join(gitDir, "index"))
	if err != nil {
		return nil
	}
	defer f.Close()
	idx := &index.Index{}
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil
	}
	t := &tracked{files: map[string]bool{}, dirs: map[string]bool{}}
	for _, e := range idx.Entries {
		name := e.Name
		t.files[name] = true
		for d := path.Dir(name); d != "." && d != "/" && !t.dirs[d]; d = path.Dir(d) {
			t.dirs[d] = true
		}
	}
	return t
}

// resolveGitDir returns the git directory of the work tree at top: top/.git,
// or the directory a ".git" file ("gitdir: …", worktrees and submodules)
// names; "" when neither.
func resolveGitDir(top string) string {
	p := filepath.Join(top, ".git")
	fi, err := os.Stat(p)
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		return p
	}
	f, err := repofs.OpenRegular(p) // a FIFO named .git must not block the walk
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	return dir
}

// has reports whether parts (from the work tree's top) is a tracked file, or
// a directory holding one.
func (t *tracked) has(parts []string, isDir bool) bool {
	if t == nil {
		return false
	}
	p := strings.Join(parts, "/")
	if isDir {
		return t.dirs[p]
	}
	return t.files[p]
}
