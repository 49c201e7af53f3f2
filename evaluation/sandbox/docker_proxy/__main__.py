"""``python -m evaluation.sandbox.docker_proxy``: the proxy's command line."""

from .cli import main

if __name__ == "__main__":
    main()
