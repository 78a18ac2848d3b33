package pipeline

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/validators/sandbox"
)

func TestPreprocess(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed")
	}
	sb := &sandbox.Sandbox{}
	sb.Disabled = sb.Check(context.Background()) != nil
	src := `#include <cmath>
#include <cfloat>
#define THREADS_PER_BLOCK 512
#define CUDA_1D_KERNEL_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#if defined(__CUDACC__) && __CUDA_ARCH__ >= 700
typedef float floatX;
#else
typedef double floatX;
#endif
__global__ void k(const floatX* x, floatX* y, int n) {
  __shared__ float tile[THREADS_PER_BLOCK];
  CUDA_1D_KERNEL_LOOP(i, n) { y[i] = fmaxf(x[i], FLT_MIN); }
}
`
	got, err := Preprocess(context.Background(), sb, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#include <cmath>\n#include <cfloat>\n", "typedef float floatX;", "__shared__ float tile[512];",
		"for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)", "__global__ void k(", "FLT_MIN"} {
		if !strings.Contains(got, want) {
			t.Errorf("preprocessed unit lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"typedef double", "CUDA_1D_KERNEL_LOOP", "#define", "#if"} {
		if strings.Contains(got, gone) {
			t.Errorf("preprocessed unit still has %q:\n%s", gone, got)
		}
	}
	if strings.Count(got, "\n") > 40 {
		t.Errorf("standard headers were pasted in (%d lines)", strings.Count(got, "\n"))
	}
	if d := EmulatorDefines(); len(d) < 2 || !strings.Contains(strings.Join(d, " "), "-D__CUDA_ARCH__=") {
		t.Errorf("emulator defines %v", d)
	}
}
