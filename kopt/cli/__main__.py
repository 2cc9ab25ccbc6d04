"""python -m kopt.cli"""

import sys

from kopt.cli import main

sys.exit(main())
