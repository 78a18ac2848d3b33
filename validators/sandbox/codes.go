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
			Doc: "The work directory grew past the disk limit (4096 MiB by default) or the file-count limit; the watchdog " +
				"polls it and kills the run. The message gives the size and the number of files."},
	)
}
