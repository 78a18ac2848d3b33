package importcheck

import "github.com/pallasify/pallasify/transforms/codes"

// The import check's codes (the PIM family).
const (
	// CodeImportFails (PIM001): a module fails to import after the
	// migration and did not fail so before.
	CodeImportFails = "PIM001"
	// CodeCollectFails (PIM002): a test module fails pytest's collection
	// after the migration and did not fail so before.
	CodeCollectFails = "PIM002"
	// CodeMissingDependency (PIM003): a module needs a third-party module
	// that is not installed; not counted against the migration.
	CodeMissingDependency = "PIM003"
	// CodePreExisting (PIM004): a module fails the same way in the original
	// tree; not counted against the migration.
	CodePreExisting = "PIM004"
	// CodeNotChecked (PIM005): the check did not reach a module (the total
	// time limit, the interpreter could not start).
	CodeNotChecked = "PIM005"
)

func init() {
	codes.Register("imports", "import check (verify --imports)",
		codes.Code{Code: CodeImportFails, Name: "import-fails", Severity: codes.Error,
			Title: "A module no longer imports after the migration",
			Doc: "The import check (`pallasify verify --imports`) imports every module of the migrated tree on the CPU, " +
				"once with torch-tpu installed and once with it hidden, and this module raised (or ran past the " +
				"per-module time limit) where the original tree's module imported (or only lacked a third-party dependency, " +
				"behind which the failure may hide). The message " +
				"gives the mode, the exception and the line of the tree that raised it. The usual cause is a device built " +
				"at import time: with --target tpu, `def f(x, device=torch.device(\"tpu\"))`, a module constant " +
				"`DEVICE = torch.device(\"tpu\")` or a class attribute raises RuntimeError on a host without a TPU " +
				"(torch-tpu installed or not), so the package and its tests no longer load; --target portable's " +
				"`torch.accelerator` form imports everywhere. Move the device to first use (inside the function body), " +
				"or use the portable form. A module that imports `torch_tpu` unconditionally fails the same way without " +
				"torch-tpu."},
		codes.Code{Code: CodeCollectFails, Name: "collect-fails", Severity: codes.Error,
			Title: "A test module no longer collects after the migration",
			Doc: "`python -m pytest --collect-only` over the migrated tree reported a collection error for this test " +
				"file (with torch-tpu installed, or hidden) that the original tree's collection did not: the test " +
				"module, its conftest.py or a module it imports raises at import. CI of the pull request would go red " +
				"before a test runs. The message gives the exception and where the tree raised it; the cause is usually " +
				"the same as PIM001's (a tpu device built at import time)."},
		codes.Code{Code: CodeMissingDependency, Name: "missing-dependency", Severity: codes.Info,
			Title: "A module needs a third-party package that is not installed",
			Doc: "Importing the module raised ModuleNotFoundError for a module outside the tree (the message names it). " +
				"That is the repository's own dependency missing from the environment the check ran in, not something " +
				"the migration did: it is counted apart from the failures, unless the original tree's module imported in " +
				"the same environment (then the migration added the import, and it is PIM001). torch_tpu hidden in the " +
				"check's second mode is never a missing dependency: that mode is there to show code that needs it."},
		codes.Code{Code: CodePreExisting, Name: "pre-existing-failure", Severity: codes.Info,
			Title: "A module fails to import in the original tree too",
			Doc: "The module (or test file) fails in the original tree too, in the same mode (the message gives both " +
				"exceptions): the failure is the repository's (a CUDA extension compiled at import, a script doing CUDA " +
				"work when imported, a missing data file), not the migration's, and is not counted against it."},
		codes.Code{Code: CodeNotChecked, Name: "import-not-checked", Severity: codes.Warning,
			Title: "The import check did not reach a module",
			Doc: "The check ran out of its total time limit, or its Python process could not start or died too often, " +
				"before this module was imported: nothing is known of it. Raise --timeout, or look at the message for " +
				"why the interpreter stopped."},
	)
}
