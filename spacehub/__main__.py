"""``python -m spacehub``: the same as the ``spacehub`` command."""

import sys

from spacehub.main import main

sys.exit(main())
