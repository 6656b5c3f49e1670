"""`python3 -m gdranalysis <compare|stragglers|report|history> ...`"""

import sys

from .cli import main

sys.exit(main())
