# The sandbox system the many-host test's workers run trials in, as the evaluation tests prepare it.
from tests.evaluation.conftest import sandboxes_ready  # noqa: F401
