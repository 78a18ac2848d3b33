package validators

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

var sprintf = fmt.Sprintf

// BenchmarkFixtureProtocol reports the full protocol's median wall time per
// fixture kernel (go test -bench FixtureProtocol -run '^$' ./validators).
func BenchmarkFixtureProtocol(b *testing.B) {
	if testPythonB(b) == "" {
		b.Skip("no venv")
	}
	noSB := (&sbWrap{}).check() != nil
	res, err := BenchFixtures(context.Background(), filepath.Join("..", "fixtures", "kernels"), b.N, Options{NoSandbox: noSB})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range res {
		// Printed, not logged: benchmark logs are truncated after ten lines.
		fmt.Printf("%-16s %-13s %-8s median %.2fs; tpu compile %s\n", r.Kernel, r.Reference, r.Verdict, r.Median.Seconds(), r.TPULine())
	}
}

func testPythonB(b *testing.B) string {
	p, _ := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	return p
}
