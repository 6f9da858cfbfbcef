"""Run the adws CLI: `python -m adws`."""

import sys

from adws.cli import main

sys.exit(main())
