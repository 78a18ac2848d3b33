package hostbuild

import "github.com/pallasify/pallasify/transforms/codes"

// CodeNotBuilt is raised by the host runtime (pyrt/pallasify_hostrt): a test
// called torch's load_inline/load for sources the capture stage did not build.
const CodeNotBuilt = "EMU-NOT-BUILT"

// The build's own codes (EMU-UNSUPPORTED and EMU-INCLUDE are the
// emulator's: validators/emulator registers them).
func init() {
	codes.Register("emulator", "CPU build of an extension",
		codes.Code{Code: CodeBuild, Name: "emu-build", Severity: codes.Error, Title: "The CPU build of the extension failed",
			Doc: "g++ rejected the extension's sources compiled for the CPU against the emulator; the message is the first " +
				"compiler error, one line. Its kernels get no captured spec (the capture stage reports the build's code)."},
		codes.Code{Code: CodeLaunch, Name: "emu-launch", Severity: codes.Error, Title: "A kernel launch the build cannot rewrite",
			Doc: "A <<<grid, block, shared, stream>>> launch in host code could not be read, so it cannot be turned into " +
				"a call of the emulator's launcher. The file and the launch are named."},
		codes.Code{Code: CodeRequest, Name: "emu-request", Severity: codes.Error, Title: "The build request is malformed",
			Doc: "No module name, no sources, or a source file that is not under the repository root: a bug in the " +
				"caller (the capture stage), not in the repository. Please report it."},
		codes.Code{Code: CodeEnv, Name: "emu-env", Severity: codes.Error, Title: "No usable torch or interpreter for the build",
			Doc: "The Python given to the build has no torch (its headers and libraries build the extension), or it " +
				"cannot run. Run `make venv` or point PALLASIFY_PYTHON at the validator's venv."},
		codes.Code{Code: CodeRuntime, Name: "emu-runtime", Severity: codes.Error, Title: "The shared host runtime failed to build",
			Doc: "The emulator's host runtime or precompiled prelude, shared by every extension build, did not compile: " +
				"a broken compiler or environment, not a problem of the repository. Run `pallasify doctor`."},
		codes.Code{Code: CodeLink, Name: "emu-link", Severity: codes.Error, Title: "The extension did not link",
			Doc: "The objects compiled but the shared library did not link (a symbol no source defines, a library the " +
				"build names that is not there). The message is the linker's first error."},
		codes.Code{Code: CodeMissingSymbol, Name: "emu-missing-symbol", Severity: codes.Error,
			Title: "The extension called a symbol no source of the build defines",
			Doc: "The build links a stub for every symbol the extension declares but none of its sources define (a CUDA " +
				"library call, a function of another extension); calling one raises this error at run time, naming the " +
				"symbol. A test that reaches it fails, so its launches may not be captured."},
		codes.Code{Code: CodeNotBuilt, Name: "emu-not-built", Severity: codes.Error,
			Title: "A test built an extension the capture stage had not built",
			Doc: "Under capture, torch.utils.cpp_extension.load_inline and load return the CPU builds made before the tests " +
				"ran. A call whose name and sources match none of them (sources computed at run time, a name the build " +
				"call does not show) is written to the capture stage's discovery file, when it asked for one, and raises this error; that " +
				"test launches nothing."},
		codes.Code{Code: CodeLimit, Name: "emu-limit", Severity: codes.Error, Title: "The sandbox stopped the build",
			Doc: "The build ran past its time or memory limit in the sandbox (limits grow with the number of translation " +
				"units). Not cached: the next run tries again."},
	)
}
