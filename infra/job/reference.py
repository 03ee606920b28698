"""The reference benchmark job, run from a checkout: `python infra/job/reference.py ARGS`
(the bundled suites' command). Same as `python -m distkpi_job` with infra/job on the path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

if __name__ == "__main__":  # the workers it spawns import this file again
    from distkpi_job.__main__ import main

    sys.exit(main())
