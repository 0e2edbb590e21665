"""pytest setup for the differential tests; the shared helpers live in tests/helpers.py."""

import sys
from pathlib import Path

# Make `import helpers` work whatever pytest's import mode is.
sys.path.insert(0, str(Path(__file__).parent))
