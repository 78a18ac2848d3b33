package kernels

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/ts"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", p, err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from golden:\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

func parseErrors(t *testing.T, src []byte) int {
	t.Helper()
	p := ts.NewParser(ts.Cpp)
	defer p.Close()
	tr, err := p.Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	return tr.ErrorCount()
}

func TestMaskGolden(t *testing.T) {
	src, err := os.ReadFile("testdata/mask/input.cu")
	if err != nil {
		t.Fatal(err)
	}
	masked, marks := Mask(src)
	if len(masked) != len(src) {
		t.Fatalf("masked length %d, source %d", len(masked), len(src))
	}
	for i := range src {
		if src[i] == '\n' && masked[i] != '\n' {
			t.Fatalf("newline at %d not kept", i)
		}
	}
	for _, m := range marks {
		if string(src[m.Start:m.End]) != m.Text {
			t.Errorf("mark %+v does not index the source", m)
		}
		if strings.TrimSpace(string(masked[m.Start:m.End])) != "" {
			t.Errorf("mark %+v not blanked", m)
		}
	}
	if n := parseErrors(t, masked); n != 0 {
		t.Errorf("masked source parses with %d errors", n)
	}
	if n := parseErrors(t, src); n == 0 {
		t.Errorf("unmasked CUDA parses cleanly; the test would not notice masking breaking")
	}
	golden(t, "mask/input.masked", masked)
	js, _ := json.MarshalIndent(marks, "", "  ")
	golden(t, "mask/input.marks.json", append(js, '\n'))
}

func TestMaskCases(t *testing.T) {
	cases := []struct {
		name, src string
		kinds     []string
	}{
		{"global", "__global__ void k() {}", []string{"__global__"}},
		{"host device", "__host__ __device__ int f();", []string{"__host__", "__device__"}},
		{"launch bounds nested", "__global__ void __launch_bounds__(MAX(1, (2)), 3) k() {}", []string{"__global__", "__launch_bounds__"}},
		{"launch multiline", "void h() { k<<<g,\n b,\n s>>>(x); }", []string{"launch"}},
		{"two launches non-greedy", "void h() { a<<<1, 2>>>(x); b<<<3, 4>>>(y); }", []string{"launch", "launch"}},
		{"comment untouched", "// __global__ <<<1,1>>>\nint x;", nil},
		{"string untouched", `const char* s = "__device__ <<<a>>>";`, nil},
		{"raw string untouched", `const char* s = R"(__device__)";`, nil},
		{"identifier prefix", "int my__global__x; int __global__2;", nil},
		{"shared constant managed", "__shared__ float a[4]; __constant__ int b; __managed__ int c;", []string{"__shared__", "__constant__", "__managed__"}},
		{"forceinline noinline", "__device__ __forceinline__ int f(); __device__ __noinline__ int g();", []string{"__device__", "__forceinline__", "__device__", "__noinline__"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			masked, marks := Mask([]byte(c.src))
			var kinds []string
			for _, m := range marks {
				kinds = append(kinds, m.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(c.kinds, ",") {
				t.Errorf("kinds %v, want %v", kinds, c.kinds)
			}
			if len(masked) != len(c.src) {
				t.Errorf("length changed")
			}
		})
	}
}

func TestLaunchConfig(t *testing.T) {
	got := LaunchConfig("<<<dim3(a, b), f(c, d), n * sizeof(float), stream>>>")
	want := []string{"dim3(a, b)", "f(c, d)", "n * sizeof(float)", "stream"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("LaunchConfig = %q, want %q", got, want)
	}
}
