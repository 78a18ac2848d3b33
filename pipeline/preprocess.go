package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/validators/emulator"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// emulatorDefineRE picks the compiler-identity macros the emulator header
// defines (__CUDACC__, __CUDA_ARCH__, __CUDACC_VER_MAJOR__, ...): the #if
// branches a kernel takes under the emulator are the ones these select.
var emulatorDefineRE = regexp.MustCompile(`(?m)^\s*#\s*define\s+(__CUDA[A-Z_]*__|__NVCC__)\s+(\S+)`)

// EmulatorDefines are the -D flags the preprocessor gets: the emulator's
// compiler-identity macros. The CUDA qualifiers (__global__, __shared__)
// are not among them, so they stay in the text for the drafters.
func EmulatorDefines() []string {
	var out []string
	for _, m := range emulatorDefineRE.FindAllStringSubmatch(emulator.Header(), -1) {
		out = append(out, "-D"+m[1]+"="+m[2])
	}
	return out
}

var includeLine = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*[<"][^>"\n]*[>"][^\n]*$`)

// Preprocess runs g++ -E -P over an isolated unit inside the sandbox, with
// the emulator's defines: macros expanded, #if branches resolved. The unit's
// #include lines (system headers only: local ones are already spliced in)
// are taken out before and put back on top after, so the standard library is
// not pasted into the text the drafters read.
func Preprocess(ctx context.Context, sb *sandbox.Sandbox, src string) (string, error) {
	work, err := sandbox.MkdirTemp("pallasify-pp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	incs := includeLine.FindAllString(src, -1)
	body := includeLine.ReplaceAllString(src, "")
	if err := os.WriteFile(filepath.Join(work, "unit.cu"), []byte(body), 0o644); err != nil {
		return "", err
	}
	argv := append([]string{"g++", "-E", "-P", "-x", "c++", "-std=c++20", "-w", "-o", "unit.i"}, EmulatorDefines()...)
	argv = append(argv, "unit.cu")
	out, err := sb.Run(ctx, work, sandbox.Limits{CPUSeconds: 30, MemoryMB: 1024, FileMB: 64, Wall: time.Minute}, argv...)
	if err != nil {
		return "", fmt.Errorf("preprocess: %w: %s", err, oneLine(emulator.TrimLog(string(out))))
	}
	b, err := repofs.ReadFile(work, "unit.i", 0) // the sandbox wrote work: no link out of it is followed
	if err != nil {
		return "", fmt.Errorf("preprocess: %w", err)
	}
	var head strings.Builder
	for _, inc := range incs {
		head.WriteString(strings.TrimSpace(inc) + "\n")
	}
	return head.String() + strings.TrimLeft(string(b), "\n"), nil
}
