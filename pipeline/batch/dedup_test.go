package batch_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
)

// One repository named twice runs once: `r1/` and `../batch/r2` (a symlink
// to r1) from inside batch/, `./r1`, and one git URL written with and
// without `.git` or a trailing slash. Each repeat is reported with a code
// naming both lines; the run goes on. Before, each spelling ran (and
// pushed) separately.
func TestDuplicateEntriesRunOnce(t *testing.T) {
	dir := t.TempDir()
	batchDir := filepath.Join(dir, "batch")
	gittest.WriteTree(t, filepath.Join(batchDir, "r1"), gittest.Sources(1))
	if err := os.Symlink("r1", filepath.Join(batchDir, "r2")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "elsewhere")
	gittest.WriteTree(t, other, gittest.Sources(2))
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/train", gittest.Sources(3))
	gittest.Git(t, bare, "branch", "dev", "main")
	srv := gittest.ServeOpenHTTPBackend(t, root)
	list := strings.Join([]string{
		"r1/",
		"../batch/r2",
		"./r1 target=tpu",
		other,
		srv.URL + "/acme/train.git",
		srv.URL + "/acme/train/",
		srv.URL + "/acme/train",
		srv.URL + "/acme/train.git branch=dev", // another branch: another run
		"r1/",
	}, "\n") + "\n"
	t.Chdir(batchDir)
	entries, probs, err := batch.ParseList(strings.NewReader(list), "repos.txt")
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, e := range entries {
		lines = append(lines, e.Line)
	}
	if len(entries) != 4 || lines[0] != 1 || lines[1] != 4 || lines[2] != 5 || lines[3] != 8 {
		t.Fatalf("entries on lines %v, want 1 4 5 8", lines)
	}
	want := map[int]string{2: `"../batch/r2" names the same repository as "r1/" on line 1`,
		3: `"./r1" names the same repository as "r1/" on line 1`,
		6: `names the same repository as "` + srv.URL + `/acme/train.git" on line 5`,
		7: `names the same repository as "` + srv.URL + `/acme/train.git" on line 5`,
		9: `"r1/" names the same repository as "r1/" on line 1`}
	if len(probs) != len(want) {
		t.Errorf("problems %v, want one per repeated line", probs)
	}
	for _, p := range probs {
		s := p.String()
		t.Log(s)
		if p.Code != batch.CodeDuplicate || !strings.HasPrefix(s, "repos.txt:") || !strings.Contains(s, want[p.Line]) {
			t.Errorf("problem %q, want line %d with %s: %s", s, p.Line, batch.CodeDuplicate, want[p.Line])
		}
	}

	cm := &countingMigrator{}
	sum, err := batch.Run(context.Background(), entries, batch.Options{RunDir: t.TempDir(), Migrate: cm.migrate, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(cm.roots)
	if strings.Join(cm.roots, ",") != "elsewhere,r1,train,train" || sum.Done != 4 {
		t.Fatalf("migrated %v (done %d); want r1 once", cm.roots, sum.Done)
	}
}

func TestRepoKey(t *testing.T) {
	same := [][]string{
		{"https://github.com/acme/train", "https://GitHub.com/acme/train.git", "https://github.com:443/acme/train/",
			"git@github.com:acme/train.git", "ssh://git@github.com/acme/train", "ssh://git@github.com:22/acme/train.git/"},
		{"file:///srv/git/x.git", "/srv/git/x.git", "/srv/git//x.git/"},
	}
	for _, group := range same {
		for _, s := range group[1:] {
			if batch.RepoKey(s) != batch.RepoKey(group[0]) {
				t.Errorf("RepoKey(%s) = %s, RepoKey(%s) = %s: want one", s, batch.RepoKey(s), group[0], batch.RepoKey(group[0]))
			}
		}
	}
	for _, pair := range [][2]string{
		{"https://github.com/acme/train", "https://github.com/acme/train2"},
		{"https://github.com/acme/train", "https://github.com:8443/acme/train"},
		{"https://github.com/acme/train", "https://gitlab.com/acme/train"},
		{"/srv/git/x.git", "/srv/git/x"}, // two directories
	} {
		if batch.RepoKey(pair[0]) == batch.RepoKey(pair[1]) {
			t.Errorf("RepoKey(%s) = RepoKey(%s) = %s", pair[0], pair[1], batch.RepoKey(pair[0]))
		}
	}
}
