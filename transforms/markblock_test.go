package transforms_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// A --mark above a statement another rule's fix wraps in a block (the
// set_device rewrite's `if DEVICE.type == "cuda":`) still marks the site on
// the second pass, where the site is the block's first statement: the second
// pass adds no copy of it (FuzzEngine seed of the device-in-data-worker
// golden).
func TestMarkAboveStatementWrappedInBlock(t *testing.T) {
	src := []byte(`import torch
from torch.utils.data import DataLoader


def seed_worker(worker_id):
    torch.cuda.set_device(worker_id)
    torch.manual_seed(worker_id)


def make(ds):
    return DataLoader(ds, num_workers=2, worker_init_fn=seed_worker)
`)
	ctx := context.Background()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	for _, tg := range rule.Targets {
		eng := &rule.Engine{Rules: transforms.All(), Opts: rule.Options{Target: tg, UnsafeFixes: true, Mark: true}}
		res, err := eng.Run(ctx, p, "data.py", src)
		if err != nil {
			t.Fatal(err)
		}
		if res.Output == nil || !strings.Contains(string(res.Output), "# pallasify: PTP007") {
			t.Fatalf("%s: no PTP007 mark:\n%s", tg, res.Output)
		}
		res2, err := eng.Run(ctx, p, "data.py", res.Output)
		if err != nil {
			t.Fatal(err)
		}
		if res2.Output != nil {
			t.Errorf("%s: the second pass changed the output:\n%s", tg, res2.Output)
		}
	}
}
