import sys

from grpo_wb.cli.main import main

sys.exit(main())
