"""The reference LLM job, run from a checkout: `python infra/job/llm.py ARGS` (the command
of infra/suites/local-llm.yaml): a small GPT under DDP or FSDP (distkpi_job/llm.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

if __name__ == "__main__":  # the workers it spawns import this file again
    from distkpi_job.llm import main

    sys.exit(main())
