package hostbuild

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProgramFixture builds fixtures/programs/block_reduce, a standalone CUDA
// program with its own CPU check, and runs it: its check passing is evidence
// that the emulator (barriers, warp shuffles, cooperative groups, dynamic
// shared memory, the runtime API) is right. The captures show its four
// kernels with cudaMalloc'd buffers and the right roles (a buffer written
// in part is an inout; one written in full, an output).
func TestProgramFixture(t *testing.T) {
	sb := testSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := filepath.Join("..", "..", "fixtures", "programs", "block_reduce")
	p, err := BuildProgram(ctx, sb, testCache(t), ProgramRequest{Root: root, Name: "block_reduce", Sources: []string{"main.cu"}})
	if err != nil {
		t.Fatalf("BuildProgram: %v", err)
	}
	res, err := RunProgram(ctx, sb, p, nil, t.TempDir(), 4, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Output, "PASS") {
		t.Fatalf("program's own check failed (exit %d):\n%s", res.ExitCode, res.Output)
	}
	shared := 512
	for _, w := range []wantLaunch{
		{Kernel: "partial_sums", Grid: &[3]int{24, 1, 1}, Block: &[3]int{256, 1, 1}, Launches: 1, Args: []wantArg{
			{Name: "in", Kind: "pointer", DType: "float32", Role: "input", Origin: "cudaMalloc", Elements: 10000},
			{Name: "partial", Kind: "pointer", DType: "float32", Role: "output", Origin: "cudaMalloc", Elements: 24},
			{Name: "n", Kind: "scalar", DType: "int32", Value: ptr(10000.0)}}},
		{Kernel: "final_sum", Grid: &[3]int{1, 1, 1}, Block: &[3]int{128, 1, 1}, Shared: &shared, Args: []wantArg{
			{Name: "partial", DType: "float32", Role: "input", Elements: 24},
			{Name: "out", DType: "float32", Role: "output", Elements: 1},
			{Name: "m", Kind: "scalar", DType: "int32", Value: ptr(24.0)}}},
		{Kernel: "saxpy", Grid: &[3]int{40, 1, 1}, Args: []wantArg{
			{Name: "n", Kind: "scalar", Value: ptr(10000.0)},
			{Name: "a", Kind: "scalar", DType: "float32", Value: ptr(2.0)},
			{Name: "x", DType: "float32", Role: "input"},
			{Name: "y", DType: "float32", Role: "inout"}}},
		// half_fill never reads out, but writes only its even elements:
		// the zeros the program put in the odd ones are part of the result
		{Kernel: "half_fill", Grid: &[3]int{20, 1, 1}, Args: []wantArg{
			{Name: "x", DType: "float32", Role: "input", Elements: 10000},
			{Name: "out", DType: "float32", Role: "inout", Elements: 10000},
			{Name: "n", Kind: "scalar", Value: ptr(10000.0)}}},
	} {
		checkWant(t, res.Launches, w)
	}
}

func ptr[T any](v T) *T { return &v }
