package kernels

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The repository-root boundary (issue 32, item 3): discovery runs outside
// the sandbox; no symlink of the repository makes it read a host file.

const hostMark = "HOST_MARK_51c2e0"

// hostTree makes a host directory (beside the repository) with a kernel
// source, a header and a spec file, all holding hostMark, and a repository
// root.
func hostTree(t *testing.T) (root, host string) {
	t.Helper()
	base := t.TempDir()
	root, host = filepath.Join(base, "repo"), filepath.Join(base, "host")
	writeFile(t, filepath.Join(host, "x.cu"), "__global__ void "+hostMark+"_kernel(float* x) { x[0] = 1.0f; }\n")
	writeFile(t, filepath.Join(host, "secret.h"), "__device__ float helper(float x) { return x * "+hostMark+"; }\n")
	writeFile(t, filepath.Join(host, "spec.yaml"), "class: "+hostMark+"\n")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, host
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoverStaysInTree: Discover with no file list (ListFiles, what
// `validate` and the fixtures use) over a repository whose links lead out —
// a .cu file, a directory an include goes through, the file a load_inline's
// open().read() names, a user spec file — lists no host kernel, puts no
// host code in any unit, and reports each with PKN008.
func TestDiscoverStaysInTree(t *testing.T) {
	root, host := hostTree(t)
	link(t, filepath.Join(host, "x.cu"), filepath.Join(root, "k.cu"))
	link(t, host, filepath.Join(root, "inc"))
	writeFile(t, filepath.Join(root, "a.cu"), "#include \"inc/secret.h\"\n__global__ void a_kernel(float* x) { x[0] = helper(x[0]); }\n")
	writeFile(t, filepath.Join(root, "inline.py"), "from torch.utils.cpp_extension import load_inline\n"+
		"m = load_inline(name=\"m\", cpp_sources=\"\", cuda_sources=open(\"inc/x.cu\").read())\n")
	link(t, filepath.Join(host, "spec.yaml"), filepath.Join(root, filepath.FromSlash(UserSpecPath(KernelID("a.cu", "a_kernel")))))

	inv, probs := Discover(context.Background(), root, nil)
	var names []string
	for _, k := range inv.Kernels {
		names = append(names, k.Path+":"+k.Name)
		if k.Unit != nil && strings.Contains(k.Unit.Source, hostMark) {
			t.Errorf("%s's unit holds host code:\n%s", k.Name, k.Unit.Source)
		}
	}
	if strings.Join(names, " ") != "a.cu:a_kernel" {
		t.Errorf("kernels %v, want a.cu:a_kernel only", names)
	}
	b, _ := json.Marshal(struct {
		I *Inventory
		P []Problem
	}{inv, probs})
	if strings.Contains(string(b), hostMark) {
		t.Errorf("the inventory or its problems hold host content:\n%s", b)
	}
	want := map[string]bool{"k.cu:0": false, "a.cu:1": false, "inline.py:2": false, UserSpecPath(KernelID("a.cu", "a_kernel")) + ":0": false}
	for _, p := range probs {
		if p.Code != CodeOutside {
			continue
		}
		key := p.Path + ":" + itoa(p.Line)
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected %s: %+v", CodeOutside, p)
		}
		want[key] = true
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("no %s at %s; problems: %+v", CodeOutside, k, probs)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestCaptureDirLinksNotFollowed: the capture directory is written by the
// repository's tests inside the sandbox; a launches.jsonl they leave as a
// link to a host file is not read.
func TestCaptureDirLinksNotFollowed(t *testing.T) {
	_, host := hostTree(t)
	writeFile(t, filepath.Join(host, "launches.jsonl"), `{"schema":"`+CaptureSchema+`","seq":1,"kernel":"`+hostMark+`"}`+"\n")
	dir := t.TempDir()
	link(t, filepath.Join(host, "launches.jsonl"), filepath.Join(dir, "launches.jsonl"))
	ls, err := ReadLaunches(dir)
	if err == nil || len(ls) > 0 {
		t.Errorf("ReadLaunches followed the link out of the capture dir: %+v, %v", ls, err)
	}
	link(t, filepath.Join(host, "secret.h"), filepath.Join(dir, "buf0"))
	if b, err := readBuf(dir, "buf0", 60); err == nil {
		t.Errorf("readBuf followed the link out of the capture dir: %q", b)
	}
}
