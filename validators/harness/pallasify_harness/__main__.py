import sys

from .protocol import main

sys.exit(main())
