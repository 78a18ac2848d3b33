package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// envVar is one PALLASIFY_* environment variable pallasify (its Go code,
// its Python and C++ helpers, the Makefile) reads.
type envVar struct {
	Name string
	Kind envKind
	Doc  string
}

type envKind int

const (
	envUser     envKind = iota // set by users and operators
	envInternal                // set by pallasify for the processes it starts
	envTest                    // read by tests and development tools only
)

// envVars lists every PALLASIFY_* variable read anywhere in the tree
// (TestEnvironmentListsEveryVariable keeps it so): `pallasify help
// environment` prints it.
var envVars = []envVar{
	{"PALLASIFY_PYTHON", envUser, "the Python interpreter (a venv's bin/python) for validation, verify, ops, capture and the Triton driver; default .venv/bin/python above the working directory, else python3"},
	{"PALLASIFY_QUEUE", envUser, "the job queue of batch, worker and bot when --queue is not given: a PostgreSQL URL or a SQLite file"},
	{"PALLASIFY_WEBHOOK_SECRET", envUser, "the bot's GitHub webhook secret (the default of github.webhook_secret_env)"},
	{"PALLASIFY_LLM_BASE_URL", envUser, "OpenAI-compatible endpoint of the LLM kernel drafter (over llm.base_url; --llm-base-url wins)"},
	{"PALLASIFY_LLM_MODEL", envUser, "the LLM drafter's model (over llm.model; --llm-model wins)"},
	{"PALLASIFY_LLM_RPM", envUser, "the LLM drafter's limit of requests per minute"},
	{"PALLASIFY_LLM_TPM", envUser, "the LLM drafter's limit of tokens per minute"},
	{"PALLASIFY_LLM_PRICE", envUser, `"IN,OUT": USD per million prompt and completion tokens, for the cost in the report`},
	{"PALLASIFY_LLM_BUDGET", envUser, "the most tokens (prompt + completion) one run may spend on the LLM drafter"},
	{"PALLASIFY_CPUPROFILE", envUser, "write a pprof CPU profile of the whole run to this file (go tool pprof bin/pallasify FILE)"},
	{"PALLASIFY_TRITON_DEBUG", envUser, "debugging: print why the Triton translator's second (flat-as-columns) pass refused a kernel, on stderr"},

	{"PALLASIFY_CAPTURE_DIR", envInternal, "where a captured run (--capture, --drive, the op comparison) writes its kernel launches and results"},
	{"PALLASIFY_CAPTURE_MAX", envInternal, "launches captured per kernel (the CPU-built extensions' runtime; default 4)"},
	{"PALLASIFY_CAPTURE_MAX_BYTES", envInternal, "bytes of argument data one capture may save (the same runtime; default 256 MiB)"},
	{"PALLASIFY_CAPTURE_REPLAY", envInternal, "0 turns off the replay that tells a captured launch's output arguments from its in-out ones (default 1)"},
	{"PALLASIFY_CAPTURE_BACKWARD", envInternal, "0 turns off the backward-pass probes of a captured run (default on)"},
	{"PALLASIFY_CAPTURE_STANDINS", envInternal, "0 turns off the stand-in tensors of a captured run (default on)"},
	{"PALLASIFY_HOSTBUILD_CONFIG", envInternal, "the JSON file that configures the CPU-built extensions' Python runtime (sitecustomize)"},
	{"PALLASIFY_TPUHOST", envInternal, "1 starts the simulated TPU host in the Python process (verify --tpu, ops); inherited values are removed"},
	{"PALLASIFY_TPUHOST_ALLOPS", envInternal, "1 records every aten op on any device (ops), not only those on tpu tensors"},
	{"PALLASIFY_TPUHOST_COVERAGE", envInternal, "the JSON of TorchTPU's op registrations the simulated host checks ops against"},
	{"PALLASIFY_TPUHOST_DEVICES", envInternal, "devices the simulated host reports (--tpu-devices)"},
	{"PALLASIFY_TPUHOST_FALLBACK", envInternal, "record or raise, for an op without a TPU kernel (--tpu-fallback)"},
	{"PALLASIFY_TPUHOST_PRECISION", envInternal, "highest or default float32 matmul precision (--tpu-precision)"},
	{"PALLASIFY_TPUHOST_REPORT", envInternal, "the file the simulated host writes its report to"},

	{"PALLASIFY_REQUIRE_STACK", envTest, "tests: 1 (make test) fails, instead of skipping, a test whose Python stack (torch, torch_tpu, jax, libtpu) is missing"},
	{"PALLASIFY_REQUIRE_BROWSER", envTest, "tests: 1 (make test) fails, instead of skipping, the HTML report's browser test when chromium is missing"},
	{"PALLASIFY_UPDATE", envTest, "tests: rewrite the Triton drive golden (cmd/pallasify)"},
	{"PALLASIFY_DUMP", envTest, "tests: log each translated Triton kernel's source (transforms/triton)"},
	{"PALLASIFY_CORPUS", envTest, "tests: also scan every tree of this corpus directory for kernels (pipeline)"},
	{"PALLASIFY_REALTREE", envTest, "tests: also check the prefilter and the reparse on every Python file of this tree"},
	{"PALLASIFY_HOSTBUILD_CACHE", envTest, "tests: cache directory of the CPU-built extensions (default in the temp dir)"},
	{"PALLASIFY_HOSTBUILD_CORPUS", envTest, "tests: measure the CPU build on this corpus directory (validators/hostbuild)"},
	{"PALLASIFY_TRITON_CORPUS", envTest, "tests: run the Triton validation on this corpus tree (validators)"},
	{"PALLASIFY_TRITON_FIXTURES", envTest, "tests: only these Triton fixtures, comma-separated (validators)"},
	{"PALLASIFY_FIXTURES_FULL", envTest, "tests: 1 runs every sweep of the kernel fixtures' Python tests"},
	{"PALLASIFY_BATCH_HELPER", envTest, "tests: makes the batch test binary act as the child process it kills (pipeline/batch)"},
}

// newEnvironmentTopic is `pallasify help environment`: a help topic (no
// command runs) listing envVars.
func newEnvironmentTopic() *cobra.Command {
	var b strings.Builder
	b.WriteString(`The PALLASIFY_* environment variables pallasify reads. A flag wins over a
variable that sets the same value. Other variables: GITHUB_TOKEN
(github.token_env) and OPENAI_API_KEY (llm.api_key_env) hold credentials;
NO_COLOR turns off the diff's colour; XDG_STATE_HOME places the worker's
default queue.
`)
	for _, g := range []struct {
		kind  envKind
		title string
	}{
		{envUser, "Settings"},
		{envInternal, "Internal: set by pallasify for the processes it starts (do not set them)"},
		{envTest, "Tests and development only"},
	} {
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, v := range envVars {
			if v.Kind == g.kind {
				fmt.Fprintf(tw, "  %s\t%s\n", v.Name, v.Doc)
			}
		}
		tw.Flush()
	}
	return &cobra.Command{
		Use:   "environment",
		Short: "The PALLASIFY_* environment variables",
		Long:  strings.TrimRight(b.String(), "\n"),
	}
}
