"""Where turnkey keeps things, as the reference tool's `turnkey.filesystem` names them.

DEFAULT_CACHE_DIR is what `turnkey cache location` prints: TURNKEY_CACHE_DIR when set, else
~/.cache/turnkey (read at import). MODELS_DIR is what `turnkey models location` prints: the
`models/` folder beside this package's `python/` folder.
"""

import os

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if os.environ.get("TURNKEY_CACHE_DIR"):
    DEFAULT_CACHE_DIR = os.path.expanduser(os.environ["TURNKEY_CACHE_DIR"])
else:
    DEFAULT_CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "turnkey")

MODELS_DIR = os.path.join(os.path.dirname(_PYTHON_DIR), "models")
