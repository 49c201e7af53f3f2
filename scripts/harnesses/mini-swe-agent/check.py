import os; os.environ.update(MSWEA_GLOBAL_CONFIG_DIR="/tmp/mswea", MSWEA_SILENT_STARTUP="1", LITELLM_LOCAL_MODEL_COST_MAP="True")  # noqa: E702
import minisweagent, litellm  # noqa: E401,F401  the runtime imports with the tree's interpreter alone
from minisweagent.run.mini import app  # noqa: F401
print("mini-swe-agent", minisweagent.__version__)
