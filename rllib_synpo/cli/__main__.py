import sys

from rllib_synpo.cli.main import main

sys.exit(main())
