"""`python3 -m gdranalysis <compare|stragglers|report|history> ...`"""

import sys

try:
    from .cli import main
except ImportError as e:   # numpy, h5py... missing: status 3, not 1 (which means "regression")
    print(f"gdrbench: error: {e}: install the packages in jobs/deps/debian-analysis.txt", file=sys.stderr)
    sys.exit(3)

sys.exit(main())
