package validators

import (
	"context"

	"github.com/pallasify/pallasify/validators/sandbox"
)

type sbWrap struct{}

func (sbWrap) check() error { return (&sandbox.Sandbox{}).Check(context.Background()) }
