import sys

from aps_teach.cli import main

sys.exit(main())
