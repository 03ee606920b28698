"""The least a command can take, for the benchmarks to time beside distkpi: a Python process
that validates one pydantic model of one field (what any command that validates its input
with pydantic pays before its own work), and that and a file's sha256 (what `distkpi kpis`
must also do for a log whose manifest names its digest)."""

PYDANTIC_MODEL = (
    "import pydantic\nclass M(pydantic.BaseModel):\n    x: int\nM.model_validate({'x': 1})\n"
)
PYDANTIC_MODEL_AND_SHA256 = (
    PYDANTIC_MODEL
    + "import hashlib, sys\nwith open(sys.argv[1], 'rb') as f:\n"
    + "    hashlib.file_digest(f, 'sha256')\n"
)
