import sys

from tags.cli import main

sys.exit(main())
