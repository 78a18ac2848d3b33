// Package files holds the rules for the files of a repository that are not
// Python (codes PNF…): requirement sets (requirements*.txt, constraints*.txt,
// pyproject.toml, setup.cfg, setup.py's install_requires, conda environment
// files), container files (Dockerfile), shell launchers (*.sh), CI workflows
// (.github/workflows, .lightning/workflows) and YAML/JSON/TOML configs.
//
// A rule is a plain value (Rule) with a code, a name, a doc with a
// before/after example for both targets, a fix safety level and a Run that
// reads the file's lines and reports findings. The engine (Check) merges
// the fixes' byte-range edits: every byte outside an edit stays as it was
// (line endings, comments, order). Files are parsed (YAML, TOML, JSON) only
// to know that they are well formed; the rules read lines and spans.
//
// Where a fix goes depends on the target. A requirement set's fixes make its
// TPU set (CUDA-only wheels and index URLs commented out, torch-tpu added):
// on --target portable that set is a new file beside the original
// (requirements.txt -> requirements-tpu.txt), so the original keeps serving
// CUDA hosts; on --target tpu, whose code runs on a TPU only, the original
// is edited in place, the removed lines kept as comments. A config value
// `device: cuda` becomes `tpu` on --target tpu only. Everything else (base
// images, GPU CI runners, nvidia-smi, GPU counts) is reported with a message
// saying what a TPU VM uses instead.
package files
