"""Run the adws CLI: `python -m adws`."""

import sys

from adws.cli import main

if __name__ == "__main__":
    sys.exit(main())
