package sandbox

import "github.com/pallasify/pallasify/transforms/codes"

// The watchdog's violation codes.
func init() {
	codes.Register("sandbox", "sandbox watchdog",
		codes.Code{Code: ViolationProcs, Name: "sandbox-procs", Severity: codes.Error,
			Title: "The sandboxed run started too many processes",
			Doc: "The watchdog counts the processes and threads of the sandbox and kills it at the limit (1024 by " +
				"default): a fork bomb, or a test that starts more workers than the limit. The message gives the count."},
		codes.Code{Code: ViolationDisk, Name: "sandbox-disk", Severity: codes.Error,
			Title: "The sandboxed run wrote too much",
			Doc: "What the run wrote — the work directory plus its private /tmp and /dev/shm, counted together — grew past " +
				"the disk limit (4096 MiB by default) or the file-count limit, and the watchdog killed it; or the run failed " +
				"with its /tmp or /dev/shm full (each a tmpfs in the host's memory, 512 MiB by default: a write past it fails). " +
				"The message says which."},
		codes.Code{Code: ViolationTime, Name: "sandbox-time", Severity: codes.Error,
			Title: "The sandboxed run passed its wall limit",
			Doc: "The run was still going at its wall-clock limit and was killed (a cancelled run is not reported so). " +
				"The message gives the limit."},
	)
}
