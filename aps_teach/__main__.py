import sys

from aps_teach.cli.main import main

sys.exit(main())
