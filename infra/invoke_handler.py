"""Call one Lambda handler as the runtime calls it, in an interpreter that holds nothing but
the layer (on PYTHONPATH, as /opt/python is in Lambda) and the function's own folder.

    python -B invoke_handler.py FUNCTION_DIR EVENT.json [EVENT.json ...]

Standard library only: it runs on the runtime's Python, outside the test environment.
Prints one JSON object: the Python version, each event's result, and every imported module
that came from neither the standard library, the layer nor the function's folder.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class LambdaContext:
    function_name: str
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:distkpi"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    timeout_s: float = 300.0  # the longest of the functions' timeouts (the sweeper's)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        """What Lambda says is left of the invocation, as the sweeper asks it."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def foreign_modules(allowed: list[Path]) -> dict[str, str]:
    """Imported modules loaded from anywhere but ``allowed``."""
    foreign = {}
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if where is None:
            continue
        path = Path(where).resolve()
        if not any(path.is_relative_to(root) for root in allowed):
            foreign[name] = str(path)
    return foreign


def main() -> None:
    folder = Path(sys.argv[1]).resolve()
    sys.path.insert(0, str(folder))
    import app  # the function's handler module, as Lambda imports `app.lambda_handler`

    context = LambdaContext(function_name=f"distkpi-{folder.name}")
    results = [
        app.lambda_handler(json.loads(Path(event).read_text()), context) for event in sys.argv[2:]
    ]
    layer = [Path(p).resolve() for p in os.environ["PYTHONPATH"].split(os.pathsep)]
    stdlib = [Path(sysconfig.get_path(key)).resolve() for key in ("stdlib", "platstdlib")]
    allowed = [folder, *layer, *stdlib, Path(__file__).resolve().parent]
    print(
        json.dumps(
            {
                "python": list(sys.version_info[:3]),
                "results": results,
                "foreign_modules": foreign_modules(allowed),
                "boto3": str(Path(sys.modules["boto3"].__file__ or "").resolve()),
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
